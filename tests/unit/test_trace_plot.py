#!/usr/bin/env python3
"""scripts/trace_plot.py draws the allocated and reserved curves of a trace, with their peaks."""
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

script = sys.argv[1]
MiB = 1 << 20
rows = [
    "seq,time_us,event,handle,size,stream",
    "0,1000,SA,0x100,%d,0" % (20 * MiB),
    "1,1100,A,0x100,%d,0" % (3 * MiB),
    "2,1200,A,0x400,%d,0" % (5 * MiB),
    "3,1300,F,0x100,%d,0" % (3 * MiB),
    "4,1350,F,0x999,%d,0" % (7 * MiB),  # allocated before the trace: skipped
    "5,1400,F,0x400,%d,0" % (5 * MiB),
    "6,1500,SF,0x100,%d,0" % (20 * MiB),
]
with tempfile.TemporaryDirectory() as d:
    trace = os.path.join(d, "t.csv")
    out = os.path.join(d, "t.svg")
    with open(trace, "w") as f:
        f.write("\n".join(rows) + "\n")
    subprocess.run([sys.executable, script, trace, "-o", out], check=True)
    root = ET.parse(out).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    lines = {p.get("class"): p.get("points").split() for p in root.iter(ns + "polyline")}
    assert set(lines) == {"allocated", "reserved"}, lines
    texts = " ".join(t.text or "" for t in root.iter(ns + "text"))
    assert "allocated (peak 8.0 MiB)" in texts, texts
    assert "reserved (peak 20.0 MiB)" in texts, texts
    # The allocated curve ends where it began: at zero, the bottom of the plot.
    first_y = float(lines["allocated"][0].split(",")[1])
    last_y = float(lines["allocated"][-1].split(",")[1])
    assert first_y == last_y, (first_y, last_y)
print("trace_plot: ok")
