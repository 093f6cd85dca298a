"""One list of options: every CACHEALLOC_* variable the code reads is in docs/options.md's table,
in cachealloc(1)'s ENVIRONMENT section and in `cachealloc --help`, and the three agree on its
default.
Usage: test_options_listed.py SOURCE_ROOT LAUNCHER
The code's variables: the rows of src/options/options.c's table (PREFIX "NAME") and every
"CACHEALLOC_NAME" string literal under src/, shim/ and tools/ (read outside the table, such as
the statistics writer's directory)."""
import os
import re
import subprocess
import sys

ROOT, LAUNCHER = sys.argv[1:3]
NAME = r"CACHEALLOC_[A-Z0-9_]*[A-Z0-9]"


def code_variables():
    found = set()
    with open(os.path.join(ROOT, "src", "options", "options.c")) as f:
        found.update("CACHEALLOC_" + n for n in re.findall(r'\{\s*PREFIX "([A-Z0-9_]+)"', f.read()))
    for top in ("src", "shim", "tools"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith((".c", ".h")):
                    with open(os.path.join(dirpath, name), errors="replace") as f:
                        found.update(re.findall('"(' + NAME + ')"', f.read()))
    return found


def plain(text):
    """A table cell or a default as words: backticks gone, the parenthesis after it dropped."""
    text = re.sub(r"\s*\(.*$", "", text.strip())
    return text.replace("`", "").strip()


def doc_table():
    rows = {}
    with open(os.path.join(ROOT, "docs", "options.md")) as f:
        for line in f:
            m = re.match(r"\|\s*`(" + NAME + r")`\s*\|[^|]*\|(.*)\|\s*$", line)
            if m:
                rows[m.group(1)] = plain(m.group(2))
    return rows


def troff_text(line):
    """One man-page source line as the words it shows (font macros joined, escapes gone)."""
    m = re.match(r"\.(B|I|BR|RB|IR|RI|BI|IB)\s+(.*)$", line)
    if m:
        line = "".join(a.strip('"') for a in re.findall(r'"[^"]*"|\S+', m.group(2)))
    elif line.startswith("."):
        return None
    line = re.sub(r"\\f[BIRP]", "", line)
    return line.replace("\\-", "-").replace("\\&", "").replace("\\(aq", "'")


def man_page():
    """ENVIRONMENT's tagged paragraphs: variable -> the text after its last 'Default:'."""
    with open(os.path.join(ROOT, "docs", "man", "cachealloc.1")) as f:
        src = f.read()
    env = src.split(".SH ENVIRONMENT", 1)[1].split("\n.SH ", 1)[0]
    rows = {}
    for para in env.split(".TP\n")[1:]:
        lines = para.splitlines()
        tag = troff_text(lines[0]) or ""
        body = " ".join(t for t in map(troff_text, lines[1:]) if t is not None)
        m = re.search(r"Default: (.+?)\.\s*$", body)
        if re.fullmatch(NAME, tag):
            rows[tag] = m.group(1).strip() if m else None
    return rows


def help_text():
    """The variables' table in --help: columns where its header puts them."""
    out = subprocess.run([LAUNCHER, "--help"], capture_output=True, text=True, check=True).stdout
    rows, cols = {}, None
    for line in out.split("The variables the library reads", 1)[-1].splitlines():
        if cols is None and "variable" in line and "default" in line:
            cols = (line.index("default"), None)
        m = re.match(r"\s+(" + NAME + r")\s", line)
        if m and cols:
            rows[m.group(1)] = line[cols[0]:cols[1]].strip()
    return rows


def main():
    code = code_variables()
    sources = {"docs/options.md": doc_table(), "cachealloc(1)": man_page(),
               "cachealloc --help": help_text()}
    problems = []
    if len(code) < 10:
        problems.append("only %d variables found in the code: the search is broken" % len(code))
    for var in sorted(code):
        defaults = {}
        for where, rows in sources.items():
            if var not in rows:
                problems.append("%s is read by the code but missing from %s" % (var, where))
            elif rows[var] is None:
                problems.append("%s in %s names no default" % (var, where))
            else:
                defaults[where] = rows[var]
        if len(set(defaults.values())) > 1:
            problems.append("%s's default differs: %s" % (var, ", ".join(
                "%s says %r" % kv for kv in defaults.items())))
    for where, rows in sources.items():
        for var in sorted(set(rows) - code):
            problems.append("%s lists %s, which the code does not read" % (where, var))
    for p in problems:
        print("FAIL:", p)
    if not problems:
        print("%d variables, each listed with one default in %s" % (len(code), ", ".join(sources)))
    return 1 if problems else 0


sys.exit(main())
