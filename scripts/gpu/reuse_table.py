#!/usr/bin/env python3
"""The loops of bench-loop as the reuse question asks them: every mode of reusing a freed block
in each of the 12 variants, and the table of their medians. One definition for the GPU check's
"reuse" section (scripts/gpu/reuse.py) and for scripts/bench-rank.sh on the simulator, so that
their tables stand side by side.

    reuse_table.py variants LIST|all  check a --variants list; prints the variants, one a line
    reuse_table.py modes              prints the modes in the table's order, a line each: key,
                                      1 if the cache is preloaded (else 0), its environment's
                                      NAME=value words, "--", bench-loop's flags
    reuse_table.py render [TITLE]     reads "VARIANT MODE PAIRS_PER_S RESERVED_BYTES" lines
                                      (one a run; RESERVED_BYTES may be "-"), prints the table
"""
import sys

# (key, column, bench-loop flags, preload the cache?, environment). "default" leaves
# CACHEALLOC_FENCES unset: the cache's own choice, whatever that is in the build measured.
MODES = (
    ("plain", "plain runtime", [], False, {}),
    ("sync", "sync-cache", ["--sync-cache"], False, {}),
    ("device", "cache, device", [], True, {"CACHEALLOC_FENCES": "device"}),
    ("events", "cache, events", [], True, {"CACHEALLOC_FENCES": "events"}),
    ("default", "cache, default", [], True, {}),
    ("reuse-sync", "cache, REUSE=sync", [], True, {"CACHEALLOC_REUSE": "sync"}),
    # The default with a larger memory bound: what holding more buys (sync-cache holds every
    # block it ever took, about seven times the working set of the 4-thread loops of 1 to 8 MiB),
    # in a row of its own, never the default's bound silently.
    ("factor-8", "cache, RESERVE_FACTOR=8", [], True, {"CACHEALLOC_RESERVE_FACTOR": "8"}),
    # The default once more, in a run of its own: how far one mode's medians differ from
    # themselves on this machine, the noise every ratio of the table carries.
    ("again", "cache, default again", [], True, {}),
    ("limit", "limit", ["--limit"], False, {}),
)
MODE_KEYS = tuple(m[0] for m in MODES)
# What each mode reports as the memory it held: the cache's own peak, or the reference's.
RESERVED_KEY = {"sync": "sync_cache_reserved_bytes", "device": "cache_peak_reserved_bytes",
                "events": "cache_peak_reserved_bytes", "default": "cache_peak_reserved_bytes",
                "reuse-sync": "cache_peak_reserved_bytes", "factor-8": "cache_peak_reserved_bytes",
                "again": "cache_peak_reserved_bytes"}
# sizes:busy:threads. fixed: 1 MiB; random: 1 to 8 MiB; busy: one of two streams kept busy.
VARIANTS = tuple("%s:%d:%d" % (s, b, t) for s in ("fixed", "random") for b in (0, 1)
                 for t in (1, 4, 16))


def parse_variants(text):
    """The variants a comma-separated list names, in its order ("all": the 12); ValueError
    naming a bad one."""
    if text.strip() == "all":
        return list(VARIANTS)
    out = []
    for v in filter(None, (x.strip() for x in text.split(","))):
        parts = v.split(":")
        ok = (len(parts) == 3 and parts[0] in ("fixed", "random") and parts[1] in ("0", "1")
              and parts[2].isdigit() and 1 <= int(parts[2]) <= 64)
        if not ok:
            raise ValueError("not a variant: %r (sizes:busy:threads, sizes fixed or random, "
                             "busy 0 or 1, threads 1 to 64; e.g. fixed:0:1,random:1:4)" % v)
        out.append("%s:%s:%d" % (parts[0], parts[1], int(parts[2])))
    if not out:
        raise ValueError("no variant named")
    return out


def loop_args(variant, mode, pairs, warmup):
    """bench-loop's arguments for one run of a mode in a variant."""
    sizes, busy, threads = variant.split(":")
    flags = next(m[2] for m in MODES if m[0] == mode)
    return ["--sizes", sizes, "--threads", threads, "--streams", "2", "--busy", busy,
            "--pairs", str(pairs), "--warmup", str(warmup)] + flags


def label(variant):
    sizes, busy, threads = variant.split(":")
    return "%s, %s" % ("1 MiB" if sizes == "fixed" else "1 to 8 MiB",
                       "idle streams" if busy == "0" else "one busy"), int(threads)


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    return xs[(len(xs) - 1) // 2] if xs else None


def medians(runs):
    """{variant: {mode: {"pairs_per_s": median, "reserved_bytes": median, "runs": n}}} from
    {variant: {mode: [(pairs_per_s, reserved_bytes or None), ...]}}."""
    out = {}
    for v, modes in runs.items():
        out[v] = {m: {"pairs_per_s": median([p for p, _ in rs]),
                      "reserved_bytes": median([r for _, r in rs]), "runs": len(rs)}
                  for m, rs in modes.items() if rs}
    return out


def ratios(row):
    """(default / sync-cache, default / the better of device and events, default / the default
    measured again), None where unknown."""
    g = lambda m: (row.get(m) or {}).get("pairs_per_s")
    d, s, again = g("default"), g("sync"), g("again")
    fixed = [x for x in (g("device"), g("events")) if x]
    return (d / s if d is not None and s else None,
            d / max(fixed) if d is not None and fixed else None,
            d / again if d is not None and again else None)


def cell(row, mode):
    """A mode's pairs a second, its share of the limit and, for a cache, what it held."""
    v = row.get(mode) or {}
    if v.get("error"):
        return "failed"
    p = v.get("pairs_per_s")
    if p is None:
        return "-"
    lim = (row.get("limit") or {}).get("pairs_per_s")
    extra = ["%.0f%%" % (100.0 * p / lim)] if lim and mode != "limit" else []
    if v.get("reserved_bytes") is not None and mode in RESERVED_KEY:
        extra.append("%.1f MiB" % (v["reserved_bytes"] / 1048576.0))
    return "%d" % p + (" (%s)" % ", ".join(extra) if extra else "")


def render(rows):
    """The markdown lines of the table of rows ({variant: {mode: {...}}}), in VARIANTS' order,
    then one line of verdict."""
    fmt = lambda x: "-" if x is None else "%.2f" % x
    L = ["| loop | threads | " + " | ".join(m[1] for m in MODES) +
         " | default / sync-cache | default / best fixed | default / default again |",
         "|---|---|" + "---|" * (len(MODES) + 3)]
    order = [v for v in VARIANTS if v in rows] + sorted(v for v in rows if v not in VARIANTS)
    for v in order:
        name, threads = label(v)
        L.append("| %s | %d | %s | %s |" % (name, threads, " | ".join(
            cell(rows[v], m) for m in MODE_KEYS), " | ".join(fmt(x) for x in ratios(rows[v]))))
    L += ["", verdict(rows)]
    return L


def held_only_by_memory(row):
    """Where sync-cache beat the default: whether the cache under the larger bound (factor-8)
    made at least sync-cache's pairs, and so sync-cache won by what it held; None when unknown."""
    g = lambda m: (row.get(m) or {}).get("pairs_per_s")
    s, w = g("sync"), g("factor-8")
    return None if s is None or w is None else w >= s


def tallies(rows):
    """The verdict's counts over rows: variants; of those with both ratios known, the default at
    least sync-cache and at least 0.95 of the better fixed policy; measured again, and below
    0.95 of itself measured again."""
    rs = [ratios(rows[v]) for v in rows]
    known = [r for r in rs if r[0] is not None and r[1] is not None]
    return {"n": len(rs),
            "ge_sync": sum(1 for a, _, _ in known if a >= 1.0),
            "ge_best": sum(1 for _, b, _ in known if b >= 0.95),
            "twice": sum(1 for _, _, c in rs if c is not None),
            "below_self": sum(1 for _, _, c in rs if c is not None and c < 0.95)}


def verdict(rows):
    """In how many variants the default held its own: against sync-cache, and within 5% of the
    better fixed fence policy; where sync-cache won, in how many the larger bound matched it;
    and the table's noise: in how many the default, measured twice, fell below 0.95 of itself."""
    t = tallies(rows)
    lost = [v for v in rows if (ratios(rows[v])[0] or 1.0) < 1.0]
    noise = ("; noise: the default below 0.95 of itself measured again in %d of %d" % (
        t["below_self"], t["twice"]) if t["twice"] else "")
    return ("Verdict: default >= sync-cache in %d of %d variants; default >= 0.95 x the best "
            "fixed policy (device, events) in %d of %d; where sync-cache won, RESERVE_FACTOR=8 "
            ">= sync-cache in %d of %d%s" % (
                t["ge_sync"], t["n"], t["ge_best"], t["n"],
                sum(1 for v in lost if held_only_by_memory(rows[v])), len(lost), noise))


def read_runs(lines):
    """{variant: {mode: [(pairs_per_s, reserved or None)]}} from render's input lines."""
    runs = {}
    for n, line in enumerate(lines, 1):
        f = line.split()
        if not f:
            continue
        try:
            v, m, p, r = f
            rec = (float(p), None if r == "-" else float(r))
        except ValueError:
            print("reuse_table: line %d ignored: %r" % (n, line.strip()), file=sys.stderr)
            continue
        runs.setdefault(v, {}).setdefault(m, []).append(rec)
    return runs


def main(argv):
    if len(argv) >= 3 and argv[1] == "variants":
        try:
            print("\n".join(parse_variants(argv[2])))
        except ValueError as e:
            print("bench-rank.sh: %s" % e, file=sys.stderr)
            return 2
        return 0
    if len(argv) == 2 and argv[1] == "modes":
        for key, _, flags, cached, env in MODES:
            print(" ".join([key, "1" if cached else "0"] +
                           ["%s=%s" % kv for kv in sorted(env.items())] + ["--"] + flags))
        return 0
    if len(argv) >= 2 and argv[1] == "render":
        if len(argv) > 2:
            print(argv[2] + "\n")
        print("\n".join(render(medians(read_runs(sys.stdin)))))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
