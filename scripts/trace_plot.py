#!/usr/bin/env python3
"""Render an allocation trace to a picture of memory over time, as PyTorch's memory viewer does.

    scripts/trace_plot.py TRACE.csv [-o OUT.svg] [--title TEXT]

TRACE.csv is in the format of CACHEALLOC_TRACE and of real recorded traces
(seq,time_us,event,handle,size,stream): the program's allocations (A/F) give the allocated
curve, the allocator's segments (SA/SF) the reserved curve. A trace that begins in the middle of
a run (frees of blocks allocated before it) is drawn relative to its lowest point. The x axis is
time when the trace has timestamps, else the event number. Needs nothing beyond Python 3."""
import argparse
import csv
import sys

WIDTH, HEIGHT = 960, 420
LEFT, RIGHT, TOP, BOTTOM = 80, 20, 40, 50


def read_curves(path):
    """Points (x, allocated, reserved) after every event that changes either."""
    live = {}
    allocated = reserved = 0
    points = []
    has_time = True
    segments = False
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            try:
                size = int(row["size"] or 0)
                event, handle = row["event"], row["handle"]
            except (KeyError, ValueError):
                continue
            if event == "A":
                live[handle] = size
                allocated += size
            elif event == "F":
                if handle not in live:
                    continue  # allocated before the trace began
                allocated -= live.pop(handle)
            elif event == "SA":
                reserved += size
                segments = True
            elif event == "SF":
                reserved -= size
                segments = True
            else:
                continue
            t = row.get("time_us") or ""
            if not t:
                has_time = False
            x = int(t) if has_time and t else int(row["seq"])
            points.append((x, allocated, reserved))
    if not has_time:
        points = [(i, a, r) for i, (_, a, r) in enumerate(points)]
    return points, has_time, segments


def human(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return ("%.0f %s" if unit == "B" else "%.1f %s") % (n, unit)
        n /= 1024.0
    return str(n)


def svg(points, has_time, segments, title):
    if not points:
        raise SystemExit("trace_plot: no allocation events in the trace")
    x0 = points[0][0]
    xs = [p[0] - x0 for p in points]
    base_a = min(0, min(p[1] for p in points))
    base_r = min(0, min(p[2] for p in points))
    alloc = [p[1] - base_a for p in points]
    resv = [p[2] - base_r for p in points]
    ymax = max(max(alloc), max(resv), 1)
    xmax = max(max(xs), 1)
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x):
        return LEFT + pw * x / xmax

    def py(y):
        return TOP + ph * (1 - y / ymax)

    def line(ys, colour, name):
        # Steps: a value holds until the next event.
        pts, prev = [], None
        for x, y in zip(xs, ys):
            if prev is not None:
                pts.append("%.1f,%.1f" % (px(x), py(prev)))
            pts.append("%.1f,%.1f" % (px(x), py(y)))
            prev = y
        return ('<polyline class="%s" fill="none" stroke="%s" stroke-width="1.5" points="%s"/>'
                % (name, colour, " ".join(pts)))

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (WIDTH, HEIGHT),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="15">%s</text>' % (LEFT, escape(title))]
    for i in range(5):
        y = ymax * i / 4
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>'
                   % (LEFT, WIDTH - RIGHT, py(y), py(y)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>'
                   % (LEFT - 6, py(y) + 4, human(y)))
    xlabel = "time (s)" if has_time else "event"
    for i in range(5):
        x = xmax * i / 4
        label = "%.2f" % (x / 1e6) if has_time else "%d" % x
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                   % (px(x), HEIGHT - BOTTOM + 18, label))
    out.append('<text x="%d" y="%d" text-anchor="middle">%s</text>'
               % (LEFT + pw / 2, HEIGHT - 8, xlabel))
    if segments:
        out.append(line(resv, "#d62728", "reserved"))
        legend = "reserved (peak %s)" % human(max(resv))
    else:
        legend = "reserved: no segment events in the trace"
    out.append(line(alloc, "#1f77b4", "allocated"))
    out.append('<text x="%d" y="%d" text-anchor="end" fill="#d62728">%s</text>'
               % (WIDTH - RIGHT - 180, TOP - 8, legend))
    out.append('<text x="%d" y="%d" fill="#1f77b4">allocated (peak %s)</text>'
               % (WIDTH - RIGHT - 170, TOP - 8, human(max(alloc))))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def escape(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("-o", "--output", help="SVG file (default: TRACE with .svg)")
    ap.add_argument("--title", help="title (default: the trace's name)")
    args = ap.parse_args()
    points, has_time, segments = read_curves(args.trace)
    out = args.output or (args.trace.rsplit(".", 1)[0] + ".svg")
    with open(out, "w") as f:
        f.write(svg(points, has_time, segments, args.title or args.trace.rsplit("/", 1)[-1]))
    print("trace_plot: %d events -> %s" % (len(points), out))


if __name__ == "__main__":
    sys.exit(main())
