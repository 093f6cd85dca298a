#!/usr/bin/env python3
"""Write a program's device memory as PyTorch's memory viewer reads it (docs/monitoring.md).

    cachealloc-snapshot TRACE.csv [-o snapshot.pickle] [--at-event N] [--format 2|1.13] [--json]
    cachealloc-snapshot --pid PID [-o snapshot.pickle] [--top PATH] [--format 2|1.13] [--json]

TRACE.csv is a CACHEALLOC_TRACE timeline (`cachealloc --trace FILE PROGRAM`): its segments
(SA/SF) and allocations (A/F) at the end of the trace, or just after the event numbered N, become
the `segments` of `torch.cuda.memory._snapshot()` with their blocks, and every device event the
`device_traces`. --format 2 (the default) is the dictionary of PyTorch 2.x, which
pytorch.org/memory_viz opens; --format 1.13 is the list of segments PyTorch 1.13 returned, which
its `python -m torch.cuda._memory_viz stats` reads. A live process (--pid) publishes totals only:
its snapshot has one segment per device and no history. --json prints the snapshot readably
instead of pickling it. Needs nothing beyond Python 3.

The trace cannot fill: Python frames (empty lists), the device (every block on device 0: the
trace has no device column), a block's exact size (the request rounded to 512 bytes, the cache's
granule; what the cache left unsplit past that shows as inactive), the wait between a free and
its reuse (free_requested and free_completed come together)."""
import argparse
import bisect
import csv
import json
import os
import pickle
import shutil
import subprocess
import sys

__all__ = ["from_trace", "from_live", "write", "main"]

ROUND = 512                # every block of the cache is a multiple of this
SMALL_SEGMENT = 2 << 20    # the small pool's segments: PyTorch's 'small' segment type
PICKLE_PROTOCOL = 4        # the viewer's own unpickler reads protocols 2 to 4
ACTIONS = {"A": "alloc", "SA": "segment_alloc", "SF": "segment_free"}


class TraceError(Exception):
    """A trace that cannot be read at all (missing, no header): one line for the user."""


def _rows(path, at_event):
    """(seq, time_us, event, addr, size, stream) of every well-formed device event; the count of
    malformed rows skipped."""
    out, bad = [], 0
    try:
        f = open(path, newline="")
    except OSError as e:
        raise TraceError("cannot read %s: %s" % (path, e.strerror)) from e
    with f:
        reader = csv.DictReader(f)
        if not reader.fieldnames or not {"event", "handle", "size"} <= set(reader.fieldnames):
            raise TraceError("%s is not a CACHEALLOC_TRACE file (no seq,time_us,event,handle,"
                             "size,stream header)" % path)
        for n, row in enumerate(reader):
            event = row.get("event")
            if event not in ("A", "F", "SA", "SF"):
                bad += event not in ("HA", "HF", "HSA", "HSF")  # pinned host memory: not device
                continue
            try:
                seq = int(row.get("seq") or n)
                if at_event is not None and seq > at_event:
                    break
                out.append((seq, int(row.get("time_us") or 0), event, int(row["handle"], 0),
                            int(row["size"] or 0), int(row.get("stream") or 0)))
            except (TypeError, ValueError):
                bad += 1
    return out, bad


class _Mapped:
    """The device ranges the cache holds: pieces [start, end) with their stream. A segment free
    may return a part of what one allocation mapped, or parts of several (expandable segments
    unmap page by page)."""

    def __init__(self):
        self.pieces = {}     # start -> [end, stream]
        self.exact = True    # every free returned exactly one earlier allocation

    def add(self, addr, size, stream):
        self.remove(addr, size, quiet=True)
        self.pieces[addr] = [addr + size, stream]

    def remove(self, addr, size, quiet=False):
        end = addr + size
        hit = self.pieces.get(addr)
        if hit and hit[0] == end:
            del self.pieces[addr]
            return
        if not quiet:
            self.exact = False
        for start in [s for s, (e, _) in self.pieces.items() if s < end and e > addr]:
            e, stream = self.pieces.pop(start)
            if start < addr:
                self.pieces[start] = [addr, stream]
            if e > end:
                self.pieces[end] = [e, stream]

    def ranges(self, merge):
        """Sorted [start, end, stream]; with merge, touching pieces of one stream joined, as
        PyTorch shows an expandable segment."""
        out = []
        for start in sorted(self.pieces):
            end, stream = self.pieces[start]
            if merge and out and out[-1][1] == start and out[-1][2] == stream:
                out[-1][1] = end
            else:
                out.append([start, end, stream])
        return out


def _rounded(requested):
    """A block's size as the cache rounds a request (CACHEALLOC_POOL=binned rounds more)."""
    return -(-max(requested, 1) // ROUND) * ROUND


def _block(addr, size, requested, state):
    return {"address": addr, "size": size, "requested_size": requested, "state": state,
            "frames": []}


def _segment(start, end, stream, live, expandable):
    """A segment of PyTorch's snapshot: [start, end) tiled by the live blocks in it and inactive
    blocks between them (the viewer places blocks by their sizes alone)."""
    blocks, at = [], start
    for i, (addr, requested) in enumerate(live):
        limit = live[i + 1][0] if i + 1 < len(live) else end
        size = min(_rounded(requested), limit - addr)
        if addr > at:
            blocks.append(_block(at, addr - at, 0, "inactive"))
        blocks.append(_block(addr, size, requested, "active_allocated"))
        at = addr + size
    if at < end:
        blocks.append(_block(at, end - at, 0, "inactive"))
    allocated = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
    return {"device": 0, "address": start, "total_size": end - start, "stream": stream,
            "segment_type": "small" if end - start <= SMALL_SEGMENT else "large",
            "allocated_size": allocated, "active_size": allocated,
            "requested_size": sum(b["requested_size"] for b in blocks),
            "segment_pool_id": (0, 0), "is_expandable": expandable, "frames": [],
            "blocks": blocks}


def _traces(rows, expandable):
    """PyTorch's trace entries of the rows, in order. A free is requested and completed at once:
    the trace does not record when the device passed it."""
    names = dict(ACTIONS)
    if expandable:
        names.update(SA="segment_map", SF="segment_unmap")
    out = []
    for _, us, event, addr, size, stream in rows:
        base = {"addr": addr, "size": size, "stream": stream, "time_us": us, "frames": []}
        if event == "F":
            out.append(dict(base, action="free_requested"))
            out.append(dict(base, action="free_completed"))
        else:
            out.append(dict(base, action=names[event]))
    return out


def _place(ranges, live):
    """The live blocks (address, requested size) of each range, in address order; the count of
    those in none."""
    starts = [r[0] for r in ranges]
    per_range, orphans = [[] for _ in ranges], 0
    for addr in sorted(live):
        i = bisect.bisect_right(starts, addr) - 1
        if i < 0 or addr >= ranges[i][1]:
            orphans += 1
        else:
            per_range[i].append((addr, live[addr]))
    return per_range, orphans


def _spans(ranges, live):
    """True when a live block runs past the end of the piece it starts in."""
    per_range, _ = _place(ranges, live)
    return any(addr + _rounded(req) > ranges[i][1]
               for i, blocks in enumerate(per_range) for addr, req in blocks)


def from_trace(path, at_event=None, warn=sys.stderr):
    """The snapshot (PyTorch 2.x dictionary) of a CACHEALLOC_TRACE file, at its end or just
    after event at_event. Raises TraceError when the file cannot be read as a trace."""
    rows, bad = _rows(path, at_event)
    mapped, live = _Mapped(), {}
    for _, _, event, addr, size, stream in rows:
        if event == "A":
            live[addr] = size
        elif event == "F":
            live.pop(addr, None)  # a free of what the trace never saw allocated: history only
        elif event == "SA":
            mapped.add(addr, size, stream)
        else:
            mapped.remove(addr, size)
    # Expandable segments map and unmap pieces of one range, and a block may span pieces.
    expandable = not mapped.exact or _spans(mapped.ranges(False), live)
    ranges = mapped.ranges(expandable)
    per_range, orphans = _place(ranges, live)
    if warn and bad:
        print("cachealloc-snapshot: %d malformed rows of %s skipped" % (bad, path), file=warn)
    if warn and orphans:
        print("cachealloc-snapshot: %d live allocations lie in no segment of the trace; left out"
              % orphans, file=warn)
    return {"segments": [_segment(s, e, st, per_range[i], expandable)
                         for i, (s, e, st) in enumerate(ranges)],
            "device_traces": [_traces(rows, expandable)]}


def _top(path):
    if path:
        return path
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cachealloc-top")
    return here if os.access(here, os.X_OK) else shutil.which("cachealloc-top") or "cachealloc-top"


def from_live(pid, top=None):
    """A snapshot of process pid's totals, read with `cachealloc-top --json`: one segment per
    device (reserved bytes, the allocated part first), no history. None when the process
    publishes no statistics. Raises TraceError when cachealloc-top cannot answer."""
    try:
        r = subprocess.run([_top(top), "--json", "--pid", str(pid)], capture_output=True,
                           text=True, timeout=30, check=False)
        doc = json.loads(r.stdout)
    except (OSError, ValueError, subprocess.TimeoutExpired) as e:
        raise TraceError("cannot read process %s with cachealloc-top: %s" % (pid, e)) from e
    procs = [p for p in doc.get("processes", []) if p.get("pid") == pid]
    if not procs:
        return None
    segments, traces = [], []
    for dev in procs[0].get("devices", []):
        reserved, allocated = int(dev.get("reserved_bytes", 0)), int(dev.get("allocated_bytes", 0))
        seg = _segment(0, reserved, 0, [(0, allocated)] if allocated else [], False)
        seg["device"] = int(dev.get("device", len(traces)))
        segments.append(seg)
        traces.append([])
    return {"segments": segments, "device_traces": traces}


def write(snapshot, out, fmt="2", as_json=False):
    """Write snapshot to the binary file out: pickled as PyTorch `fmt` ('2': the dictionary,
    '1.13': the list of segments), or as JSON text."""
    doc = snapshot if fmt == "2" else snapshot["segments"]
    if as_json:
        out.write((json.dumps(doc, indent=1) + "\n").encode())
    else:
        pickle.dump(doc, out, protocol=PICKLE_PROTOCOL)


def main(argv=None):
    """The command line; returns the exit status."""
    p = argparse.ArgumentParser(prog="cachealloc-snapshot",
                                description="A CACHEALLOC_TRACE file (or a live process's "
                                "totals) as a snapshot for PyTorch's memory viewer.")
    p.add_argument("trace", nargs="?", help="a CACHEALLOC_TRACE file")
    p.add_argument("--pid", type=int, help="a live process under the cache (totals only)")
    p.add_argument("-o", "--output", default="-", help="the file to write (default: stdout)")
    p.add_argument("--at-event", type=int, metavar="N",
                   help="the state just after the event numbered N (the seq column)")
    p.add_argument("--format", choices=["2", "1.13"], default="2",
                   help="PyTorch 2.x's dictionary (default) or 1.13's list of segments")
    p.add_argument("--json", action="store_true", help="readable JSON instead of a pickle")
    p.add_argument("--top", help="the cachealloc-top to read a live process with")
    a = p.parse_args(argv)
    if (a.trace is None) == (a.pid is None):
        p.error("give a trace file or --pid, one of them")
    try:
        snap = from_trace(a.trace, a.at_event) if a.pid is None else from_live(a.pid, a.top)
    except TraceError as e:
        print("cachealloc-snapshot: %s" % e, file=sys.stderr)
        return 1
    if snap is None:
        print("cachealloc-snapshot: process %d publishes no statistics" % a.pid, file=sys.stderr)
        return 1
    if a.output == "-":
        write(snap, sys.stdout.buffer, a.format, a.json)
        return 0
    try:
        with open(a.output, "wb") as out:
            write(snap, out, a.format, a.json)
    except OSError as e:
        print("cachealloc-snapshot: cannot write %s: %s" % (a.output, e.strerror), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
