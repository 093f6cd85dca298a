"""A small checker of OpenMetrics text exposition: the subset cachealloc-top emits.

check(text) returns {(sample name, frozenset(labels.items())): value} or raises ValueError.
As a program: reads stdin, exits 1 with the reason on failure."""
import re
import sys

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')
SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$")


def parse_labels(text):
    labels = {}
    body = text[1:-1]
    pos = 0
    while pos < len(body):
        m = LABEL.match(body, pos)
        if not m:
            raise ValueError("bad label set: %r" % text)
        if m.group(1) in labels:
            raise ValueError("duplicate label %s" % m.group(1))
        labels[m.group(1)] = re.sub(r"\\(.)", lambda x: "\n" if x.group(1) == "n" else x.group(1), m.group(2))
        pos = m.end()
        if pos < len(body):
            if body[pos] != ",":
                raise ValueError("bad label separator: %r" % text)
            pos += 1
    return labels


def check(text):
    if not text.endswith("# EOF\n"):
        raise ValueError("does not end with '# EOF'")
    lines = text[:-1].split("\n")
    if lines.count("# EOF") != 1:
        raise ValueError("'# EOF' not exactly once")
    families = {}
    current = None
    seen_done = set()
    samples = {}
    for line in lines[:-1]:
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            if len(parts) < 4 or not NAME.match(parts[2]):
                raise ValueError("bad metadata line: %r" % line)
            name = parts[2]
            if name != current:
                if name in seen_done or name in families:
                    raise ValueError("family %s interleaved or repeated" % name)
                if current:
                    seen_done.add(current)
                current = name
            kind = families.setdefault(name, {})
            key = parts[1]
            if key in kind:
                raise ValueError("two %s lines for %s" % (key, name))
            kind[key] = parts[3]
            if key == "TYPE" and parts[3] not in ("counter", "gauge"):
                raise ValueError("unexpected type %r" % parts[3])
            continue
        if line.startswith("#") or not line:
            raise ValueError("unexpected line: %r" % line)
        m = SAMPLE.match(line)
        if not m:
            raise ValueError("bad sample line: %r" % line)
        name, labels, value = m.group(1), m.group(2) or "{}", m.group(3)
        if current is None or "TYPE" not in families[current]:
            raise ValueError("sample before its TYPE: %r" % line)
        expect = current + "_total" if families[current]["TYPE"] == "counter" else current
        if name != expect:
            raise ValueError("sample %s in family %s (expected %s)" % (name, current, expect))
        if not re.match(r"^-?[0-9]+(\.[0-9]+)?$", value):
            raise ValueError("bad value %r" % value)
        key = (name, frozenset(parse_labels(labels).items()))
        if key in samples:
            raise ValueError("duplicate sample %r" % line)
        samples[key] = float(value) if "." in value else int(value)
    for name, meta in families.items():
        if "HELP" not in meta or "TYPE" not in meta:
            raise ValueError("family %s lacks HELP or TYPE" % name)
    return samples


if __name__ == "__main__":
    try:
        check(sys.stdin.read())
    except ValueError as e:
        print("invalid OpenMetrics: %s" % e)
        sys.exit(1)
