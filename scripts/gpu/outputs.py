"""What the GPU check reads in its programs' output: the cache's exit summary, key=value lines
and a last line of JSON (scripts/gpu/check.py and reuse.py share them)."""
import json
import re

SUMMARY_RE = re.compile(r"cachealloc: (\w+): (\d+) allocations served, (\d+) cache hits, "
                        r"(\d+) driver calls avoided, peak reserved (\d+) bytes")


def summary(out):
    """The cache's exit summary (CACHEALLOC_VERBOSE=1) summed over its lines, or None."""
    got = SUMMARY_RE.findall(out)
    if not got:
        return None
    return {"served": sum(int(g[1]) for g in got), "hits": sum(int(g[2]) for g in got),
            "avoided": sum(int(g[3]) for g in got), "peak_reserved": max(int(g[4]) for g in got)}


def keyvals(out):
    """The key=value lines of a program's output (bench-loop's and the others'), as strings."""
    return dict(line.split("=", 1) for line in out.splitlines() if re.match(r"^\w+=", line))


def last_json(text):
    """The last line that starts a JSON object, parsed; None when there is none or it is bad."""
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None
