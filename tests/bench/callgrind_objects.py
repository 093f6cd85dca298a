#!/usr/bin/env python3
"""callgrind_objects.py OUT [--total | --object SUBSTRING]: instructions (Ir) of a callgrind
profile, in total and by object (the self cost of each object's functions, calls excluded).
--total prints the total alone; --object the summed self cost of the objects whose path
contains SUBSTRING."""
import re
import sys


def objects(path):
    names = {}  # compressed ids: "(3) /lib/x.so" defines (3), "(3)" refers to it
    cost = {}
    total = 0
    obj = None
    skip_next = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("summary:") or line.startswith("totals:"):
                total = int(line.split()[1])
                continue
            m = re.match(r"^(c?ob)=(?:\((\d+)\))?\s*(.*)$", line)
            if m:
                key, ident, name = m.groups()
                if ident and name:
                    names[ident] = name
                resolved = names.get(ident, name) if ident else name
                if key == "ob":
                    obj = resolved
                continue
            if line.startswith("calls="):
                skip_next = True  # the next cost line is the call's inclusive cost
                continue
            if line and (line[0].isdigit() or line[0] in "+-*"):
                if skip_next:
                    skip_next = False
                    continue
                fields = line.split()
                if len(fields) >= 2 and obj is not None:
                    cost[obj] = cost.get(obj, 0) + int(fields[1])
    return total, cost


def main():
    total, cost = objects(sys.argv[1])
    if len(sys.argv) > 2 and sys.argv[2] == "--total":
        print(total)
        return
    if len(sys.argv) > 3 and sys.argv[2] == "--object":
        print(sum(v for k, v in cost.items() if sys.argv[3] in k))
        return
    print("total", total)
    for k, v in sorted(cost.items(), key=lambda kv: -kv[1]):
        print(v, k)


main()
