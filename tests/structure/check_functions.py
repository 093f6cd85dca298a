#!/usr/bin/env python3
"""No function of the product is longer than a reader can hold (suite "structure").

    check_functions.py SOURCE_ROOT [MAX_LINES]

Every function defined in src/ and shim/ (.c and .h, top level, the project's own style: the
body's braces at column 0, or the opening brace ending the signature's line) spans at most
MAX_LINES lines (default 80), from its opening brace to its closing one. Exits 1 and names
every function over it, longest first.
"""
import os
import re
import sys

SIGNATURE_END = re.compile(r'^[A-Za-z_].*\)\s*\{\s*$')
NOT_A_FUNCTION = ('typedef', 'struct', 'enum', 'union', 'static const', 'const', '#')


def functions(path):
    """(lines, name, first line) of each top-level function body in path."""
    lines = open(path, errors='replace').read().split('\n')
    i = 0
    while i < len(lines):
        line = lines[i]
        opens = line == '{' or (SIGNATURE_END.match(line) and not line.startswith(NOT_A_FUNCTION))
        if not opens:
            i += 1
            continue
        j = i - 1 if line == '{' else i
        sig = lines[j]
        while j > 0 and '(' not in sig:
            j -= 1
            sig = lines[j] + sig
        names = re.findall(r'([A-Za-z_]\w*)\s*\(', sig)
        start, depth = i, 0
        while i < len(lines):
            depth += lines[i].count('{') - lines[i].count('}')
            if depth <= 0 and '}' in lines[i]:
                break
            i += 1
        yield i - start + 1, names[0] if names else '?', start + 1
        i += 1


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = sys.argv[1]
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 80
    found = []
    for top in ('src', 'shim'):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith(('.c', '.h')):
                    path = os.path.join(dirpath, f)
                    for n, name, line in functions(path):
                        found.append((n, name, os.path.relpath(path, root), line))
    if not found:
        print('check_functions.py: no function found under', root, file=sys.stderr)
        return 1
    over = sorted((f for f in found if f[0] > limit), reverse=True)
    for n, name, rel, line in over:
        print(f'{rel}:{line}: {name} spans {n} lines, over {limit}')
    print(f'{len(found)} functions, longest {max(found)[0]} lines ({max(found)[1]})')
    return 1 if over else 0


if __name__ == '__main__':
    sys.exit(main())
