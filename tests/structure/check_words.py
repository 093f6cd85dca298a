#!/usr/bin/env python3
"""Retired words stay retired (suite "structure").

    check_words.py LIST SOURCE_ROOT DIR ...
    check_words.py --each LIST FILE

LIST holds one regular expression a line (matched ignoring case), then " # " and the word that
replaced it; lines that start with "#" are comments. The first form reads every file under
each DIR of SOURCE_ROOT and names each line where a retired word is back: code and comments
alike. The second checks the list itself: FILE must match every expression of LIST, so that an
expression that can match nothing fails. Exits 1 on any finding, 2 on a list it cannot read.
"""
import os
import re
import sys


def load(path):
    """[(compiled expression, its text, what replaced it)] from LIST."""
    words = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            expr, _, instead = line.partition(" # ")
            expr = expr.strip()
            try:
                words.append((re.compile(expr, re.I), expr, instead.strip() or "?"))
            except re.error as e:
                sys.exit("%s:%d: not a regular expression (%s): %s" % (path, n, e, expr))
    if not words:
        sys.exit("%s: no retired word listed" % path)
    return words


def lines_of(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().splitlines()
    except (UnicodeDecodeError, OSError):
        return []  # not text: nothing a reader reads as a word


def findings(words, path, shown):
    out = []
    for n, line in enumerate(lines_of(path), 1):
        for rx, expr, instead in words:
            if rx.search(line):
                out.append("%s:%d: retired word /%s/ (now: %s): %s" %
                           (shown, n, expr, instead, line.strip()))
    return out


def main(argv):
    if len(argv) == 4 and argv[1] == "--each":
        words = load(argv[2])
        text = "\n".join(lines_of(argv[3]))
        missed = [expr for rx, expr, _ in words if not rx.search(text)]
        for expr in missed:
            print("%s: no line matches /%s/" % (argv[3], expr))
        print("retired words: %s" % ("%d never match" % len(missed) if missed else "each matches"))
        return 1 if missed else 0
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    words, root, errors = load(argv[1]), argv[2], []
    for d in argv[3:]:
        top = os.path.join(root, d)
        if not os.path.isdir(top):
            errors.append("no folder %s" % d)
            continue
        for dirpath, dirnames, files in os.walk(top):
            dirnames.sort()
            for f in sorted(files):
                path = os.path.join(dirpath, f)
                errors += findings(words, path, os.path.relpath(path, root))
    for e in errors:
        print(e)
    print("retired words: %s" % ("%d back" % len(errors) if errors else "none back"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
