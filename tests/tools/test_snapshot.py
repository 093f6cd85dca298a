"""cachealloc-snapshot on a real run: snapshot_prog under `cachealloc --trace` on the simulated
driver, its trace written as PyTorch's snapshot, read back by Debian's torch through its own
Python: the totals torch's reader computes are the cache's own figures for that run.

    test_snapshot.py TOOL LAUNCHER PROGRAM TOP SIMDEV_LD_PATH TORCH_PYTHON

Exit 77 (skipped) when TORCH_PYTHON cannot import torch."""
import json
import os
import pickle
import pickletools
import re
import subprocess
import sys
import tempfile
import time

TOOL, LAUNCHER, PROG, TOP, SIMDEV, TORCH_PY = sys.argv[1:7]

# The opcodes the viewer's own unpickler (torch/utils/viz/MemoryViz.js, pytorch.org/memory_viz)
# knows; any other stops it.
VIEWER_OPCODES = {
    "PROTO", "FRAME", "STOP", "MARK", "MEMOIZE", "BINPUT", "LONG_BINPUT", "BINGET",
    "LONG_BINGET", "EMPTY_DICT", "EMPTY_LIST", "EMPTY_TUPLE", "DICT", "LIST", "TUPLE",
    "TUPLE1", "TUPLE2", "TUPLE3", "APPEND", "APPENDS", "SETITEM", "SETITEMS", "BININT",
    "BININT1", "BININT2", "LONG1", "SHORT_BINUNICODE", "BINUNICODE", "BINFLOAT", "NEWTRUE",
    "NEWFALSE", "NONE"}

# Run inside TORCH_PY: torch 1.13's own reader, _memory_viz.stats, on both formats, and its
# flame-graph lines (segments/memory without the flamegraph.pl they would download).
READER = r"""
import json, pickle, sys
from torch.cuda import _memory_viz as mv
old = pickle.load(open(sys.argv[1], "rb"))
new = pickle.load(open(sys.argv[2], "rb"))
lines = mv.segments(old, format_flamegraph=lambda s: s)
out = {}
for name, segs in (("1.13", old), ("2", new["segments"])):
    out[name] = {k: getattr(v, "value", v) for k, v in mv.stats(segs).items()}
out["flame_lines"] = lines.count("\n")
print(json.dumps(out))
"""

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, **kw)


def convert(*args):
    return run([sys.executable, TOOL] + list(args))


def check_run(trace, tmp, env):
    """The program's run written as a snapshot, read by torch; False when it did not run."""
    print("CACHEALLOC_EXPANDABLE=%s" % env["CACHEALLOC_EXPANDABLE"])
    r = run([LAUNCHER, "--trace", trace, PROG], env=env)
    m = re.search(r"reserved_bytes=(\d+) allocated_bytes=(\d+) live=(\d+)", r.stdout)
    if r.returncode != 0 or not m:
        print("program failed (%d):\n%s%s" % (r.returncode, r.stdout, r.stderr))
        return False
    reserved, allocated, live = (int(x) for x in m.groups())
    print("the cache's figures: reserved %d, allocated %d, %d blocks live" % (reserved, allocated, live))

    old, new = os.path.join(tmp, "old.pickle"), os.path.join(tmp, "new.pickle")
    for fmt, path in (("1.13", old), ("2", new)):
        r = convert(trace, "-o", path, "--format", fmt)
        expect(r.returncode == 0 and r.stderr == "", "convert --format %s: %s" % (fmt, r.stderr))

    # Torch's own reader, through Debian's Python, on both formats.
    r = run([TORCH_PY, "-m", "torch.cuda._memory_viz", "stats", old])
    expect(r.returncode == 0 and "'total_size'" in r.stdout,
           "python -m torch.cuda._memory_viz stats: %s%s" % (r.stdout, r.stderr))
    r = run([TORCH_PY, "-c", READER, old, new])
    expect(r.returncode == 0, "torch reader: %s" % r.stderr)
    seen = json.loads(r.stdout) if r.returncode == 0 else {}
    for fmt in ("1.13", "2"):
        got = seen.get(fmt, {})
        print("torch %s reader (format %s): %s" % ("1.13", fmt, got))
        expect(got.get("total_size") == reserved, "format %s: reserved %s, the cache %d"
               % (fmt, got.get("total_size"), reserved))
        expect(got.get("active_allocated") == allocated, "format %s: allocated %s, the cache %d"
               % (fmt, got.get("active_allocated"), allocated))
    expect(seen.get("flame_lines", 0) >= live, "flame graph lines: %s" % seen.get("flame_lines"))

    # The viewer's view: its unpickler reads it; blocks tile their segments; the history replays
    # to the live blocks; streams are kept.
    with open(new, "rb") as f:
        raw = f.read()
    ops = list(pickletools.genops(raw))
    names = {op.name for op, _, _ in ops}
    expect(names <= VIEWER_OPCODES, "opcodes the viewer cannot read: %s" % (names - VIEWER_OPCODES))
    expect(all(2 <= arg <= 4 for op, arg, _ in ops if op.name == "PROTO"),
           "a pickle protocol the viewer refuses (it reads 2 to 4)")
    snap = pickle.loads(raw)
    blocks = [b for s in snap["segments"] for b in s["blocks"]]
    active = [b for b in blocks if b["state"] == "active_allocated"]
    expect(len(active) == live, "%d active blocks, the program holds %d" % (len(active), live))
    expect(all(b["requested_size"] <= b["size"] for b in active), "requested above size")
    for s in snap["segments"]:
        at = s["address"]
        for b in s["blocks"]:
            expect(b["address"] == at, "block at %#x, tiling expects %#x" % (b["address"], at))
            at += b["size"]
    events = snap["device_traces"][0]
    held = {}
    for e in events:
        if e["action"] == "alloc":
            held[e["addr"]] = e["size"]
        elif e["action"] == "free_completed":
            held.pop(e["addr"], None)
    expect(sum(held.values()) == sum(b["requested_size"] for b in active),
           "the history's live bytes are not the blocks' requested bytes")
    streams = {e["stream"] for e in events if e["action"] == "alloc"}
    expect(len(streams) == 2, "allocations on %d streams, the program used 2" % len(streams))

    return True


def check_pieces(tmp):
    """Expandable segments' pieces: a block across two mappings, a part of one unmapped. The
    touching pieces are one segment, as PyTorch shows an expandable segment, and the history
    maps and unmaps (the viewer merges those, where it matches allocs and frees exactly)."""
    mib = 1 << 20
    path = os.path.join(tmp, "pieces.csv")
    with open(path, "w") as f:
        f.write("seq,time_us,event,handle,size,stream\n"
                "0,1,SA,%#x,%d,7\n1,2,SA,%#x,%d,7\n2,3,A,%#x,%d,7\n3,4,SF,%#x,%d,7\n"
                % (16 * mib, 2 * mib, 18 * mib, 2 * mib, 17 * mib, 3 * mib // 2 + 1,
                   16 * mib, mib))
    r = convert(path, "--json")
    doc = json.loads(r.stdout) if r.returncode == 0 else {"segments": [], "device_traces": [[]]}
    segs = [(s["address"], s["total_size"], s["is_expandable"],
             [(b["state"], b["size"]) for b in s["blocks"]]) for s in doc["segments"]]
    want = [(17 * mib, 3 * mib, True, [("active_allocated", 3 * mib // 2 + 512),
                                       ("inactive", 3 * mib // 2 - 512)])]
    expect(segs == want, "pieces: %s, not %s" % (segs, want))
    actions = [e["action"] for e in doc["device_traces"][0]]
    expect(actions == ["segment_map", "segment_map", "alloc", "segment_unmap"],
           "pieces' history: %s" % actions)


def main():
    try:
        importable = run([TORCH_PY, "-c", "import torch.cuda._memory_viz"]).returncode == 0
    except OSError:
        importable = False
    if not importable:
        print("SKIP: %s cannot import torch (Debian: apt-get install python3-torch)" % TORCH_PY)
        return 77
    tmp = tempfile.mkdtemp(prefix="ca-snapshot-")
    env = dict(os.environ, LD_LIBRARY_PATH=SIMDEV, CACHEALLOC_SHM_DIR=tmp)
    for expandable in ("1", "0"):
        trace = os.path.join(tmp, "run%s.csv" % expandable)
        if not check_run(trace, tmp, dict(env, CACHEALLOC_EXPANDABLE=expandable)):
            return 1
    check_pieces(tmp)
    # --at-event: just after the first allocation, one block.
    seq = next(int(l.split(",")[0]) for l in open(trace) if ",A," in l)
    r = convert(trace, "--at-event", str(seq), "--json")
    early = json.loads(r.stdout) if r.returncode == 0 else {"segments": []}
    n = sum(b["state"] == "active_allocated" for s in early["segments"] for b in s["blocks"])
    expect(n == 1, "--at-event %d: %d active blocks, not 1" % (seq, n))

    # Bad input: one line on stderr, status 1, no traceback.
    garbage = os.path.join(tmp, "garbage.csv")
    with open(garbage, "w") as f:
        f.write("not,a,trace\n1,2,3\n")
    for bad in (os.path.join(tmp, "missing.csv"), garbage):
        r = convert(bad, "-o", os.path.join(tmp, "x.pickle"))
        expect(r.returncode == 1 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr,
               "bad input %s: %d %s" % (bad, r.returncode, r.stderr))

    # A live process: totals only, read with cachealloc-top.
    env["SNAPSHOT_HOLD_MS"] = "20000"
    p = subprocess.Popen([LAUNCHER, PROG], env=env, stdout=subprocess.PIPE, text=True)
    try:
        m = re.search(r"reserved_bytes=(\d+) allocated_bytes=(\d+)", p.stdout.readline())
        # The process publishes its figures every 250 ms: the first may predate its blocks.
        for _ in range(20):
            r = run([sys.executable, TOOL, "--pid", str(p.pid), "--top", TOP, "--json"],
                    env=dict(os.environ, CACHEALLOC_SHM_DIR=tmp))
            doc = json.loads(r.stdout) if r.returncode == 0 else {"segments": []}
            segs = [s for s in doc["segments"] if s["device"] == 0]
            if m and segs and segs[0]["total_size"] == int(m.group(1)):
                break
            time.sleep(0.25)
        expect(m and len(segs) == 1 and segs[0]["total_size"] == int(m.group(1))
               and segs[0]["allocated_size"] == int(m.group(2)),
               "live snapshot %s, the process said %s (%s)" % (segs, m and m.groups(), r.stderr))
    finally:
        p.kill()
        p.wait()
    if failures:
        print("%d failed" % len(failures))
        return 1
    print("snapshot read by torch: totals equal the cache's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
