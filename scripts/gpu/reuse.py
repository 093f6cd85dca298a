"""The GPU check's first section, "reuse" (docs/gpu.md): what the driver charges for the calls a
freed block's reuse is built from (the gpu-fence-cost probe, whose prices become
OUTDIR/simdev-profile.env), bench-loop's 12 variants in every mode of reuse_table.MODES, and
PyTorch's training step under its own caching allocator and under the cache, with the cache's
wait counters beside each cached row. It saves the report after each part, so that a run cut
short keeps what it measured.
"""
import os
import shutil
import sys
import tempfile
import time

import reuse_table
import simdev_profile
from outputs import keyvals, last_json, summary

# The cache's wait counters, as cachealloc-top --json gives them per device, when it does.
WAIT_FIELDS = ("sync_wait_ns", "fence_wait_ns", "fence_waits", "grow_ns", "growths")
TORCH_RESERVE_S = 70  # what the PyTorch rows need at the end of the section on a GPU
PROFILE_FILE = "simdev-profile.env"
# (key, what it is, workloads.py arguments (SHIM: the library), preload?, environment)
TORCH_ROWS = (
    ("own", "PyTorch's own caching allocator", ["torch"], False, {}),
    ("nocache-cache", "PYTORCH_NO_CUDA_MEMORY_CACHING=1 under the cache (its default fences)",
     ["torch"], True, {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}),
    ("pluggable", "CUDAPluggableAllocator with the library's pair (no preload)",
     ["torch-pluggable", "SHIM"], False, {}),
    # The fence policies apart, where time is left: which one a framework's many streams favour.
    ("nocache-device", "the same under CACHEALLOC_FENCES=device", ["torch"], True,
     {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "CACHEALLOC_FENCES": "device"}),
    ("nocache-events", "the same under CACHEALLOC_FENCES=events", ["torch"], True,
     {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "CACHEALLOC_FENCES": "events"}),
)


def section(r, deadline):
    """The section's result; r.report holds it as it grows, saved after each part."""
    res = {"status": "incomplete"}
    r.report["sections"]["reuse"] = res
    res["probe"] = probe(r, min(deadline, time.monotonic() + 60))
    res["profile"] = write_profile(r, res["probe"])
    r.save()
    loops(r, deadline - (0 if r.sim else TORCH_RESERVE_S), res)
    r.save()
    res["torch"] = torch_rows(r, deadline)
    bad = res["loops"].get("errors") or [k for k, v in res["torch"].items()
                                         if v.get("status") == "failed"]
    res["status"] = "failed" if bad else "ok"
    return res


def probe(r, deadline):
    """gpu-fence-cost without the cache: the driver's prices, recorded whole."""
    prog = os.path.join(r.build, "tests", "gpu", "gpu-fence-cost")
    if not os.path.exists(prog):
        return {"status": "skipped", "why": "tests/gpu/gpu-fence-cost not built"}
    if deadline - time.monotonic() < 5:
        return {"status": "skipped", "why": "out of time"}
    rc, out, dt = r.run([prog], r.env(False), deadline - time.monotonic())
    return {"status": "ok" if rc == 0 else "failed", "exit": rc, "seconds": round(dt, 1),
            "output": out[-8000:]}


def device_words(r):
    """(GPU, driver) as the environment section read them from nvidia-smi."""
    if r.sim:
        return "the simulated driver (tests/simdevice)", "simulated"
    parts = [p.strip() for p in (r.report["sections"].get("environment", {}).get("gpu") or
                                 "").split(",")]
    return parts[0] or "unknown", parts[1] if len(parts) > 1 else "unknown"


def write_profile(r, pr):
    """OUTDIR/simdev-profile.env from the probe's prices, or why there is none."""
    prices = simdev_profile.prices(pr.get("output", "")) if pr.get("exit") == 0 else {}
    if not prices:
        return {"status": "skipped", "why": "the probe gave no prices (%s)" % pr.get(
            "why", "exit %s" % pr.get("exit"))}
    gpu, driver = device_words(r)
    text = simdev_profile.profile_text(pr["output"], gpu, driver, r.manifest.get("commit"))
    with open(os.path.join(r.outdir, PROFILE_FILE), "w") as f:
        f.write(text)
    return {"status": "ok", "file": PROFILE_FILE, "prices": prices}


def loop_env(r, mode):
    cached, extra = next((m[3], m[4]) for m in reuse_table.MODES if m[0] == mode)
    e = r.env(cached, {"CACHEALLOC_VERBOSE": "0"} if cached else None)
    for k in ("CACHEALLOC_FENCES", "CACHEALLOC_REUSE"):  # the default is the cache's own
        e.pop(k, None)
    e.update(extra)
    return e


def loops(r, deadline, res):
    """Rounds of every variant in every mode, interleaved, into res["loops"]: the medians of the
    rounds done, saved after each round."""
    rounds, pairs = (1, 1000) if r.sim else (3, 20000)
    prog = os.path.join(r.build, "tests", "bench", "bench-loop")
    runs, done = {}, 0
    out = res["loops"] = {"rounds": 0, "pairs": pairs, "rows": {}, "errors": []}
    if not os.path.exists(prog):
        out["why"] = "tests/bench/bench-loop not built (CUDA toolkit missing where packed)"
        return
    for rnd in range(rounds):
        for v, mode in [(v, m) for v in reuse_table.VARIANTS for m in reuse_table.MODE_KEYS]:
            if time.monotonic() > deadline - 3:
                out["cut_short"] = "out of time after %d runs" % done
                break
            done += 1
            rec = one_run(r, prog, v, mode, pairs, deadline, out)
            if rec is not None:
                runs.setdefault(v, {}).setdefault(mode, []).append(rec)
        out["rows"] = reuse_table.medians(runs)
        if "cut_short" in out:
            break
        out["rounds"] = rnd + 1
        r.save()


def one_run(r, prog, v, mode, pairs, deadline, out):
    """(pairs a second, bytes held or None) of one run, or None with its error in out."""
    n = pairs // 10 if mode == "plain" else pairs  # the plain runtime pays the driver a pair
    cmd = [prog] + reuse_table.loop_args(v, mode, n, max(10, n // 20))
    rc, text, _ = r.run(cmd, loop_env(r, mode), min(60, deadline - time.monotonic()))
    kv = keyvals(text)
    if rc != 0 or "pairs_per_s" not in kv:
        out["errors"].append("%s %s: exit %s: %s" % (v, mode, rc, text.strip()[-200:]))
        return None
    key = reuse_table.RESERVED_KEY.get(mode)
    held = kv.get(key) or (kv.get("peak_reserved_bytes") if key else None)
    # The cache's own wait counters, should bench-loop print them (cache_..._wait_ns and kin).
    waits = {k: kv[k] for k in kv if k.startswith("cache_") and ("wait" in k or "grow" in k)}
    if waits:
        out.setdefault("counters", {})["%s.%s" % (v, mode)] = waits
    return float(kv["pairs_per_s"]), float(held) if held else None


def torch_rows(r, deadline):
    """PyTorch's step under its own allocator and under the cache, with the cache's counters."""
    if r.sim:
        why = "needs a GPU (the simulated driver runs no kernel)"
        return {k: {"status": "skipped", "why": why, "what": what} for k, what, *_ in TORCH_ROWS}
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads.py")
    py = os.environ.get("GPU_CHECK_PYTHON", sys.executable)
    top = os.path.join(r.build, "tools", "cachealloc-top")
    shm = tempfile.mkdtemp(prefix="cachealloc-gpu-check-stats.")
    rows, own = {}, None
    try:
        for key, what, argv, cached, extra in TORCH_ROWS:
            # PyTorch absent or blind to the GPU for one row is so for all.
            skipped = next((v["why"] for v in rows.values() if v["status"] == "skipped"), None)
            if skipped or deadline - time.monotonic() < 15:
                rows[key] = {"status": "skipped", "why": skipped or "out of time", "what": what}
                continue
            env = r.env(cached, dict(extra, CUBLAS_WORKSPACE_CONFIG=":4096:8"))
            if key != "own":
                env.update(CACHEALLOC_STATS="1", CACHEALLOC_SHM_DIR=shm, CACHEALLOC_VERBOSE="1",
                           GPU_CHECK_TOP=top)
            cmd = [py, script] + [r.shim if a == "SHIM" else a for a in argv]
            rows[key] = torch_row(r, cmd, env, min(90, deadline - time.monotonic()), own)
            rows[key]["what"] = what
            if key == "own":
                own = rows[key].get("result")
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    for v in rows.values():
        v.pop("result", None)
    return rows


def torch_row(r, cmd, env, limit, own_result):
    """One row: its step, wall time, losses against own_result and the cache's counters."""
    rc, text, dt = r.run(cmd, env, limit)
    j = last_json(text) or {}
    if rc == "timeout" and limit < 90:  # the budget's end, not the program's fault
        return {"status": "skipped", "why": "out of time"}
    if rc == 77:
        return {"status": "skipped", "why": j.get("skipped", text.strip()[-200:])}
    if rc != 0 or "step_s" not in j:
        return {"status": "failed", "exit": rc, "tail": text[-1200:]}
    row = {"status": "ok", "step_s": j["step_s"], "wall_s": round(dt, 2), "result": j.get("result"),
           "cache": summary(text)}
    if own_result is not None:
        row["same_losses_as_own"] = j.get("result") == own_result
    st = j.get("cache_stats")
    if st is not None:
        devs = st.get("devices") or []
        got = {f: sum(d[f] for d in devs if isinstance(d.get(f), int)) for f in WAIT_FIELDS
               if any(f in d for d in devs)}
        row["counters"] = got
        if not got:
            row["counters_why"] = st.get("error") or "not in this build's statistics"
    return row


# ------------------------------------------------------------------------------ the report
def markdown(sec):
    """The section's lines of report.md."""
    L = ["", "## Reuse: the fence calls' prices, the loops in every mode, PyTorch", ""]
    pr = sec.get("probe") or {}
    pf = sec.get("profile") or {}
    L.append("gpu-fence-cost: %s" % (pr.get("status") if "why" not in pr else
                                     "%s (%s)" % (pr["status"], pr["why"])))
    if pf.get("status") == "ok":
        L += ["", "Prices written to `%s` (SIMDEV_PROFILE=PATH loads it):" % pf["file"], "",
              "| variable | us |", "|---|---|"]
        L += ["| %s | %s |" % (k, simdev_profile.fmt(v)) for k, v in pf["prices"].items()]
    elif pf:
        L.append("No profile file: %s" % pf.get("why"))
    lo = sec.get("loops") or {}
    if lo.get("rows"):
        L += ["", "bench-loop beside 2 streams: pairs a second, the median of %d interleaved "
              "round(s) of %d pairs (plain: a tenth); in brackets the share of the limit and the "
              "peak reserved%s:" % (lo.get("rounds", 0), lo.get("pairs", 0),
                                    "; " + lo["cut_short"] if lo.get("cut_short") else ""), ""]
        L += reuse_table.render(lo["rows"])
    if lo.get("why"):
        L.append("Loops: %s" % lo["why"])
    for e in lo.get("errors", [])[:12]:
        L.append("- FAILED %s" % e)
    for k, c in sorted((lo.get("counters") or {}).items()):
        L.append("- wait counters of %s: %s" % (k, ", ".join("%s %s" % x for x in c.items())))
    tr = sec.get("torch") or {}
    if tr:
        L += ["", "PyTorch, 40 training steps (median step after 5):", "",
              "| row | what | status | step ms | wall s | same losses as own | served / hits |"
              " sync wait ms | fence wait ms (waits) | grow ms (growths) |",
              "|---|---|---|---|---|---|---|---|---|---|"]
        L += [torch_line(k, v) for k, v in tr.items()]
    return L


def torch_line(key, v):
    """One PyTorch row of report.md."""
    c = v.get("counters") or {}
    ms = lambda f: "%.1f" % (c[f] / 1e6) if f in c else "-"
    n = lambda f: " (%d)" % c[f] if f in c else ""
    cache = v.get("cache") or {}
    same = v.get("same_losses_as_own")
    status = v["status"] + (": %s" % v["why"] if v.get("why") else "") + (
        " (exit %s)" % v["exit"] if v.get("exit") is not None else "")
    if v.get("counters_why"):
        status += "; counters: %s" % v["counters_why"]
    return "| %s | %s | %s | %s | %s | %s | %s / %s | %s | %s%s | %s%s |" % (
        key, v.get("what", ""), status,
        "%.3f" % (v["step_s"] * 1e3) if v.get("step_s") is not None else "-",
        v.get("wall_s", "-"), "-" if same is None else ("yes" if same else "no"),
        cache.get("served", "-"), cache.get("hits", "-"), ms("sync_wait_ns"),
        ms("fence_wait_ns"), n("fence_waits"), ms("grow_ns"), n("growths"))


def summary_line(sec):
    """The section's words in the printed summary table."""
    rows = (sec.get("loops") or {}).get("rows") or {}
    t = reuse_table.tallies(rows)
    v = ("default >= sync-cache %d/%d, >= 0.95 x best fixed %d/%d, < 0.95 x itself %d/%d" % (
        t["ge_sync"], t["n"], t["ge_best"], t["n"], t["below_self"], t["n"])
         if rows else "no loops")
    own = (sec.get("torch") or {}).get("own") or {}
    if own.get("step_s") is not None:
        v += "; torch own %.2f ms" % (own["step_s"] * 1e3)
    return v
