#!/usr/bin/env python3
"""The harness of scripts/gpu-check.sh (which says how to call it).

Two steps. `pack` runs where the project is built: it writes a manifest of the tests of suite
"gpu" (read from `meson introspect`) and a tarball of the built programs and libraries, so that
a machine with a GPU needs neither the build's dependencies nor a compiler. `run` unpacks them
and runs, against the real driver (or, with --sim, the simulated one): the marked integration
tests, framework workloads and CUDA library programs plainly and under the cache, the
benchmarks, and compute-sanitizer's memcheck. Each section has a share of a time budget; what
does not fit is reported as skipped for lack of time, never silently dropped. It writes
report.md and report.json to the output directory and prints one summary table.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
T0 = time.monotonic()  # the budget counts from the start, unpacking included
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from outputs import keyvals, last_json, summary  # noqa: E402 - beside this file
import reuse  # noqa: E402


# ------------------------------------------------------------------------------- the pack
def pack(builddir, packdir, traces):
    """Write packdir/manifest.json and packdir/build.tar.gz from a configured, built builddir."""
    builddir = os.path.abspath(builddir)
    out = subprocess.run(["meson", "introspect", builddir, "--tests"], check=True,
                         capture_output=True, text=True).stdout
    tests = []
    for t in json.loads(out):
        if not any(s.endswith(":gpu") for s in t["suite"]):
            continue
        tests.append({"name": t["name"], "cmd": [sub(a, builddir) for a in t["cmd"]],
                      "env": {k: sub(v, builddir) for k, v in t["env"].items()},
                      "timeout": t["timeout"],
                      "alone": any(s.endswith(":device-wide") for s in t["suite"])})
    if not tests:
        raise SystemExit("gpu-check: the build has no test of suite gpu (CUDA toolkit or "
                         "-Dtests=true missing): nothing to carry")
    os.makedirs(packdir, exist_ok=True)
    files = []
    for root, dirs, names in os.walk(builddir):
        dirs[:] = [d for d in dirs if not d.endswith(".p") and not d.startswith("meson-")]
        for n in names:
            p = os.path.join(root, n)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            if ".so" in n or (os.access(p, os.X_OK) and not n.endswith((".sh", ".py"))):
                files.append(os.path.relpath(p, builddir))
    with tarfile.open(os.path.join(packdir, "build.tar.gz"), "w:gz") as tf:
        for f in sorted(files):
            tf.add(os.path.join(builddir, f), arcname=f)
        for t in traces:
            tf.add(t, arcname=os.path.join("traces", os.path.basename(t)))
    manifest = {"tests": tests, "cuda_path": os.environ.get("CUDA_PATH", "/usr/local/cuda"),
                "made": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()),
                "commit": git_commit(), "traces": [os.path.basename(t) for t in traces]}
    with open(os.path.join(packdir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return len(tests), len(files)


def sub(s, builddir):
    """A manifest string: the build and source roots become @BUILD@ and @SRC@."""
    return s.replace(builddir, "@BUILD@").replace(SRC, "@SRC@")


def git_commit():
    try:
        r = subprocess.run(["git", "-C", SRC, "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, errors="replace", timeout=20)
        return r.stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


# ------------------------------------------------------------------------------ running
class Run:
    """One check: the mode, the unpacked build, the budget and the report under way."""

    def __init__(self, args, build, manifest):
        self.sim = args.sim
        self.build = build
        self.manifest = manifest
        self.outdir = args.outdir
        self.t0 = T0
        self.budget = args.budget
        self.jobs = args.jobs or min(8, os.cpu_count() or 2)
        self.report = {"mode": "sim" if self.sim else "real", "sections": {}}
        self.shim = os.path.join(build, "shim", "libcachealloc.so")
        cuda = manifest.get("cuda_path", "/usr/local/cuda")
        sim_path = [os.path.join(build, "tests", "simdevice", "driver")] if self.sim else []
        self.libpath = sim_path + [os.path.join(cuda, "lib64")] + find_lib_dirs()
        self.log = open(os.path.join(self.outdir, "log.txt"), "a")

    def left(self):
        return self.budget - (time.monotonic() - self.t0)

    def env(self, cached, extra=None):
        """The environment of a plain or a cached run (never the caller's LD_PRELOAD)."""
        e = dict(os.environ)
        e.pop("LD_PRELOAD", None)
        e["LD_LIBRARY_PATH"] = ":".join(self.libpath + ([e["LD_LIBRARY_PATH"]]
                                                        if e.get("LD_LIBRARY_PATH") else []))
        e["CACHEALLOC_STATS"] = "0"
        if cached:
            e["LD_PRELOAD"] = self.shim
            e["CACHEALLOC_VERBOSE"] = "1"
        e.update(extra or {})
        return e

    def run(self, cmd, env, timeout, cwd=None):
        """(exit status, 'timeout' or 'error', output, seconds) of one command. It runs in a
        process group of its own, killed whole at the timeout: a program a test script started,
        or one stuck in the driver, neither outlives its limit nor holds the output open."""
        t = time.monotonic()
        try:
            p = subprocess.Popen(cmd, env=env, cwd=cwd or self.build, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        except OSError as e:
            rc, out = "error", str(e)
        else:
            try:
                raw, _ = p.communicate(timeout=max(1, timeout))
                rc = p.returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
                raw = b""
            finally:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
            if rc == "timeout":
                try:
                    raw, _ = p.communicate(timeout=5)
                except subprocess.TimeoutExpired:
                    raw = b""  # unkillable (in the driver): left behind, the check goes on
            out = (raw or b"").decode("utf-8", errors="replace")
        dt = time.monotonic() - t
        self.log.write("$ %s  [%s, %.2f s]\n%s\n" % (" ".join(cmd), rc, dt, out[-4000:]))
        self.log.flush()
        return rc, out, dt

    def section(self, name, share, fn):
        """Run fn with its share of what is left; record its result or why it did not run."""
        limit = min(share, self.left())
        if limit < 5:
            self.report["sections"][name] = {"status": "skipped", "why": "out of time"}
            return
        t = time.monotonic()
        try:
            res = fn(self, time.monotonic() + limit)
        except Exception as e:  # noqa: BLE001 - a broken section must not lose the others
            res = {"status": "error", "why": "%s: %s" % (type(e).__name__, e)}
        res["seconds"] = round(time.monotonic() - t, 1)
        self.report["sections"][name] = res
        self.save()

    def save(self):
        """report.json and report.md as they stand: a run cut short keeps what it measured."""
        write_files(self.outdir, self.report)


def find_lib_dirs():
    """Library folders of pip's NVIDIA wheels (cuDNN, NCCL, ...) where a Python has them."""
    dirs = []
    for pat in ["/usr/local/lib/python3*/dist-packages/nvidia/*/lib",
                "/opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib",
                "/usr/lib/python3/dist-packages/nvidia/*/lib"]:
        dirs += sorted(glob.glob(pat))
    try:
        import site
        for s in site.getsitepackages():
            dirs += sorted(glob.glob(os.path.join(s, "nvidia", "*", "lib")))
    except Exception:  # noqa: BLE001 - no site packages: nothing to add
        pass
    return list(dict.fromkeys(d for d in dirs if os.path.isdir(d)))


# ------------------------------------------------------------------------------ sections
def environment(r, deadline):
    def cmd(c):
        try:
            return subprocess.run(c, capture_output=True, text=True, errors="replace",
                                  timeout=max(1, min(20, deadline - time.monotonic()))
                                  ).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""
    info = {"host": platform.node(), "cpus": os.cpu_count(), "kernel": platform.release(),
            "libc": " ".join(platform.libc_ver()), "python": platform.python_version(),
            "pack_commit": r.manifest.get("commit"), "pack_made": r.manifest.get("made"),
            "gpu": cmd(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                        "--format=csv,noheader"]),
            "nvcc": cmd(["nvcc", "--version"]).splitlines()[-1:] or [""],
            "lib_dirs": r.libpath}
    info["nvcc"] = info["nvcc"][0]
    for m in ["torch", "cupy", "jax", "numba"]:
        v = cmd([sys.executable, "-c", "import importlib.metadata as m; print(m.version(%r))"
                 % ("numba-cuda" if m == "numba" else ("cupy-cuda13x" if m == "cupy" else m))])
        info[m] = v or "absent"
    info["status"] = "ok"
    return info


def integration(r, deadline):
    tests = r.manifest["tests"]
    results = []

    def one(t):
        if time.monotonic() > deadline - 2:
            return {"name": t["name"], "status": "skipped", "why": "out of time"}
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        for k, v in t["env"].items():
            env[k] = v.replace("@BUILD@", r.build).replace("@SRC@", SRC)
        if not r.sim:
            env["LD_LIBRARY_PATH"] = ":".join(p for p in env.get("LD_LIBRARY_PATH", "").split(":")
                                              if p and "/tests/simdevice" not in p)
            env["LD_LIBRARY_PATH"] = ":".join(filter(None, [env["LD_LIBRARY_PATH"]] + r.libpath))
        # The stress of the shared-runtime build runs 100,000 operations per thread in the
        # test suite; here it runs 12,500, as the other builds do, to fit the budget.
        if int(env.get("CA_STRESS_OPS", "0") or 0) > 12500:
            env["CA_STRESS_OPS"] = "12500"
        cmd = [a.replace("@BUILD@", r.build).replace("@SRC@", SRC) for a in t["cmd"]]
        cap = min(t["timeout"] or 60, 90)
        limit = min(cap, max(1, deadline - time.monotonic()))
        rc, out, dt = r.run(cmd, env, limit)
        res = {"name": t["name"], "seconds": round(dt, 2)}
        if rc == "timeout" and limit < cap:
            res["status"] = "skipped"
            res["why"] = "out of time"
        elif rc == 77:
            res["status"] = "skipped"
            res["why"] = ("reads the simulator's counters" if "not running on the simulated device"
                          in out else (out.strip().splitlines() or ["exit 77"])[-1][:200])
            if not r.sim and res["why"] != "reads the simulator's counters":
                res["status"], res["exit"], res["output"] = "failed", rc, out[-1500:]
        elif rc == 0:
            res["status"] = "passed"
        else:
            res["status"] = "failed"
            res["exit"] = rc
            res["output"] = out[-1500:]
        return res

    # A test of suite device-wide takes most of the device's memory: on a GPU, where every
    # test shares one device, it runs after the others, one at a time (each simulated device
    # is its own, so the simulated mode needs no such care but takes it too).
    with concurrent.futures.ThreadPoolExecutor(r.jobs) as ex:
        results = list(ex.map(one, [t for t in tests if not t.get("alone")]))
    results += [one(t) for t in tests if t.get("alone")]
    counts = {s: sum(1 for x in results if x["status"] == s)
              for s in ("passed", "failed", "skipped")}
    sim_skips = sum(1 for x in results if x.get("why") == "reads the simulator's counters")
    return {"status": "ok" if counts["failed"] == 0 else "failed", "counts": counts,
            "skipped_sim_counters": sim_skips, "tests": results}


WORKLOADS = [
    # name, plain extra env, cached extra env, argv after workloads.py, what "plain" means
    ("torch", {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "CUBLAS_WORKSPACE_CONFIG": ":4096:8"},
     {}, ["torch"], "PYTORCH_NO_CUDA_MEMORY_CACHING=1, without / with the preload"),
    ("torch-pluggable", {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}, {}, None,
     "PyTorch's own caching allocator / CUDAPluggableAllocator with the library's pair"),
    ("cupy", {}, {}, ["cupy"], "CuPy's pool off (cuRAND, cuBLAS, cuFFT, CUB sort, NCCL one rank)"),
    ("jax", {"XLA_PYTHON_CLIENT_ALLOCATOR": "platform", "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
             "XLA_FLAGS": "--xla_gpu_deterministic_ops=true"},
     {}, ["jax"], "XLA_PYTHON_CLIENT_ALLOCATOR=platform"),
    ("numba", {}, {}, ["numba"], "numba-cuda device arrays"),
]


def frameworks(r, deadline):
    if r.sim:  # the simulated driver runs no kernel: every framework would fail both ways
        return {"status": "skipped", "why": "needs a GPU (the simulated driver runs no kernel)"}
    res = {}
    script = os.path.join(SRC, "scripts", "gpu", "workloads.py")
    py = os.environ.get("GPU_CHECK_PYTHON", sys.executable)
    for name, plain_env, cached_env, argv, what in WORKLOADS:
        if time.monotonic() > deadline - 10:
            res[name] = {"status": "skipped", "why": "out of time"}
            continue
        if name == "torch-pluggable":
            plain = ([py, script, "torch"], r.env(False, plain_env))
            cached = ([py, script, "torch-pluggable", r.shim],
                      r.env(False, dict(plain_env, CACHEALLOC_VERBOSE="1")))
        else:
            plain = ([py, script] + argv, r.env(False, plain_env))
            cached = ([py, script] + argv, r.env(True, dict(plain_env, **cached_env)))
        res[name] = compare_runs(r, plain, cached, deadline, 90)
        res[name]["what"] = what
    bad = [n for n, v in res.items() if v["status"] not in (
        "same", "skipped", "differs from run to run without the cache too")]
    return {"status": "ok" if not bad else "failed", "workloads": res}


def compare_runs(r, plain, cached, deadline, cap):
    """Run a program plainly and under the cache; compare its JSON result or its output."""
    out = {}
    for label, (cmd, env) in (("plain", plain), ("cached", cached)):
        limit = min(cap, deadline - time.monotonic())
        if limit < 3:
            return {"status": "skipped", "why": "out of time"}
        rc, text, dt = r.run(cmd, env, limit)
        out[label] = (rc, text, dt)
        if rc == "timeout" and limit < cap:
            return {"status": "skipped", "why": "out of time"}
        if rc == 77:
            last = (text.strip().splitlines() or ["{}"])[-1]
            try:
                why = json.loads(last).get("skipped", last)
            except ValueError:
                why = last
            if label == "cached":  # it ran plainly: under the cache it must run too
                return {"status": "differs", "why": "skipped under the cache only: %s" % why,
                        "cached_output": text[-1200:]}
            return {"status": "skipped", "why": why}
    (prc, ptext, pdt), (crc, ctext, cdt) = out["plain"], out["cached"]
    res = {"plain_exit": prc, "cached_exit": crc, "plain_wall_s": round(pdt, 2),
           "cached_wall_s": round(cdt, 2), "cache": summary(ctext)}
    pj, cj = last_json(ptext), last_json(ctext)
    if pj is not None and cj is not None:
        for k in ("step_s", "first_loss", "last_loss", "nccl"):
            if k in pj:
                res["plain_" + k], res["cached_" + k] = pj.get(k), cj.get(k)
        same = pj.get("result") == cj.get("result")
    else:
        strip = lambda t: "\n".join(l for l in t.splitlines() if not l.startswith("cachealloc"))
        same = strip(ptext) == strip(ctext)
        res["output"] = strip(ptext)[-300:]
    if prc == 0 and crc == 0 and not same and time.monotonic() < deadline - 2 * pdt:
        # Is the program deterministic at all? A second plain run says.
        rc2, text2, _ = r.run(plain[0], plain[1], min(cap, deadline - time.monotonic()))
        p2 = last_json(text2)
        if rc2 == 0 and p2 is not None and pj is not None and p2.get("result") != pj.get("result"):
            res["status"] = "differs from run to run without the cache too"
            res["plain_output"], res["cached_output"] = ptext[-600:], ctext[-600:]
            return res
    if prc == 0 and crc == 0:
        res["status"] = "same" if same else "differs"
        # On a GPU the cache must have served the program: a preload the loader ignored
        # would compare the driver with itself.
        if same and not r.sim and not (res["cache"] or {}).get("served"):
            res["status"] = "not served by the cache"
    elif prc == crc and same and r.sim:
        res["status"] = "fails the same way with and without the cache"
    elif prc == crc and same:
        res["status"] = "fails with and without the cache"
    else:
        res["status"] = "differs"
    if res["status"] != "same":
        res["plain_output"], res["cached_output"] = ptext[-1200:], ctext[-1200:]
    return res


# The library programs of tests/gpu/: C programs linked with the shared runtime, then the
# sorting loops built with nvcc (the static runtime), which print their result and median step
# time as JSON on their last line.
LIBRARIES = ("cublas", "cufft", "curand", "cudnn", "nccl", "thrust", "cub")


def libraries(r, deadline):
    res = {}
    for name in LIBRARIES:
        prog = os.path.join(r.build, "tests", "gpu", "gpu-lib-" + name)
        if not os.path.exists(prog):
            res[name] = {"status": "skipped", "why": "not built (%s missing where the pack was "
                         "made)" % ("nvcc" if name in ("thrust", "cub") else "header or library")}
            continue
        res[name] = compare_runs(r, ([prog], r.env(False)), ([prog], r.env(True)), deadline, 60)
    # On the simulated driver they fail alike with and without the cache (docs/gpu.md); on a
    # GPU each must run, and the same.
    ok = ("same", "skipped", "fails the same way with and without the cache")
    bad = [n for n, v in res.items() if v["status"] not in ok]
    return {"status": "ok" if not bad else "failed", "libraries": res}


def bench(r, deadline):
    b = os.path.join(r.build, "tests", "bench")
    res = {"status": "ok"}
    quick = r.sim
    envc = r.env(True, {"CACHEALLOC_VERBOSE": "0"})
    envp = r.env(False)

    def kv(cmd, env, cap=60):
        if time.monotonic() > deadline - 3:
            return None
        rc, out, _ = r.run(cmd, env, min(cap, deadline - time.monotonic()))
        v = keyvals(out)
        if rc == 0:
            return v
        # CUB's pairs fail some calls with several threads, and now and then crash (CCCL 13.0
        # records a freed block's event after letting go of its mutex, so another thread may
        # destroy that event first): its rate still counts, with the failures beside it, and
        # a crash of the peer is its own, shown apart, not a failure of this check.
        if "bench-pairs-cub" in cmd[0]:
            return v if "pairs_per_s" in v else {"peer_error": "exit %s" % rc}
        return {"error": "exit %s: %s" % (rc, out[-300:])}

    # The hit pair: the static build under the cache, CUB without it, the plain runtime.
    threads = [1, 2, 4] if quick else [1, 2, 4, 8, 16]
    total = 200000 if quick else 4000000
    pairs = {}
    for rnd in range(1 if quick else 2):
        for api in ("plain", "async"):
            for t in threads:
                for who, prog, env, n in (("cache", "bench-pairs-static", envc, total),
                                          ("cub", "bench-pairs-cub", envp, total // 10)):
                    k = "%s.%s.%d" % (who, api, t)
                    v = kv([os.path.join(b, prog), "--api", api, "--threads", str(t),
                            "--pairs", str(max(1, n // t))], env)
                    if v and "pairs_per_s" in v:
                        pairs[k] = max(pairs.get(k, 0), float(v["pairs_per_s"]))
                        if int(v.get("failures", "0") or 0):
                            pairs[k + ".failures"] = int(v["failures"])
                    elif v and "peer_error" in v:
                        pairs.setdefault(k + ".peer_error", v["peer_error"])
                    elif v:
                        pairs.setdefault(k + ".error", v.get("error"))
    for api in ("plain", "async"):
        v = kv([os.path.join(b, "bench-pairs-static"), "--api", api, "--pairs", "2000"], envp)
        if v and "pairs_per_s" in v:
            pairs["runtime.%s.1" % api] = float(v["pairs_per_s"])
    res["pairs"] = pairs
    # Trace replays: plain, the cache, expandable segments, CUB.
    replays = {}
    traces = [os.path.join(SRC, "tests", "bench", "small_trace.csv")]
    if not quick:
        traces += [os.path.join(r.build, "traces", t) for t in r.manifest.get("traces", [])]
    for tr in traces:
        # expand: CUDA's default (growth priced: solo mappings from 4 MiB far from the edge
        # while handles are dear, pages otherwise); expand-pages, a page a handle throughout;
        # expand-4M and expand-growth (one mapping a growth): the first pass's cost of coarser
        # pieces (docs/arena.md, "Pieces").
        pieces = {"expand": "auto", "expand-pages": "2M", "expand-4M": "4M",
                  "expand-growth": "1T"}
        for mode in ("plain", "cache", "expand", "expand-pages", "expand-4M", "expand-growth",
                     "cub"):
            prog = "bench-replay-cub" if mode == "cub" else "bench-replay"
            env = envp if mode in ("plain", "cub") else envc
            if mode == "cache":  # plain segments
                env = dict(env, CACHEALLOC_EXPANDABLE="0")
            elif mode in pieces:
                env = dict(env, CACHEALLOC_EXPANDABLE="1", CACHEALLOC_EXPANDABLE_PIECE=pieces[mode])
            v = kv([os.path.join(b, prog), tr, "--memset", "8", "--passes", "3"], env, 120)
            if v:
                replays["%s.%s" % (os.path.basename(tr), mode)] = {
                    k: v.get(k) for k in ("wall_s", "alloc_failures", "later_failures",
                                           "vmm_creates", "driver_mallocs",
                                           "peak_live_bytes", "peak_reserved_bytes",
                                           "cache_peak_reserved_bytes", "cache_driver_allocs",
                                           "cache_driver_frees", "fragmentation",
                                           "fragmentation_all_passes", "events", "error")
                    if v.get(k) is not None}
    res["replays"] = replays
    # Pinned host memory (issue 27's targets): 64 MiB pin/free pairs, and 1 to 8 MiB ones with an
    # asynchronous copy from each buffer before its free, plainly and under the cache. Under the
    # cache a random pair costs its copy (the free waits for the device, as the driver's does):
    # the ratio is (pinning + unpinning + copy) / copy, which only the GPU's own copy speed says.
    pinned = {}
    for loop, plain_n, cache_n in (("fixed", 20 if quick else 50, 200 if quick else 2000),
                                   ("random", 100 if quick else 300, 500 if quick else 5000)):
        for mode, n in (("plain", plain_n), ("cache", cache_n)):
            v = kv([os.path.join(b, "bench-pinned"), "--loop", loop, "--pairs", str(n)],
                   envc if mode == "cache" else envp)
            if v:
                pinned["%s.%s" % (loop, mode)] = {
                    k: v.get(k) for k in ("pairs", "pairs_per_s", "driver_host_allocs",
                                           "driver_host_allocs_after_warmup", "error")
                    if v.get(k) is not None}
    res["pinned"] = pinned
    # The demo: 1000 x (2 GiB allocation, 1 MiB memset, free), plain and cached.
    demo = os.path.join(r.build, "tests", "demo", "alloc_loop")
    it = "100" if quick else "1000"
    d = {}
    for label, env in (("plain", envp), ("cached", r.env(True))):
        if time.monotonic() > deadline - 3:
            break
        rc, out, dt = r.run([demo, it, str(2 << 30)], env, min(120, deadline - time.monotonic()))
        d[label] = {"exit": rc, "wall_s": round(dt, 3), "cache": summary(out)}
    res["demo"] = d
    errors = [k for k, v in (list(pairs.items()) + list(replays.items()) +
                             list(pinned.items()))
              if (isinstance(v, dict) and "error" in v) or k.endswith(".error")]
    errors += ["demo." + k for k, v in d.items() if v["exit"] != 0]
    if errors:
        res["status"] = "failed"
        res["errors"] = errors
    return res


def probes(r, deadline):
    """Programs whose output is recorded for a person to read, not judged."""
    res = {"status": "ok"}
    prog = os.path.join(r.build, "tests", "gpu", "gpu-thread-ctx")
    if not os.path.exists(prog):
        return {"status": "skipped", "why": "tests/gpu/gpu-thread-ctx not built"}
    for label, env in (("plain", r.env(False)), ("cached", r.env(True))):
        if time.monotonic() > deadline - 3:
            break
        rc, out, _ = r.run([prog], env, min(30, deadline - time.monotonic()))
        own = "\n".join(l for l in out.splitlines() if not l.startswith("cachealloc"))
        res["thread_ctx." + label] = {"exit": rc, "output": own[-1200:], "cache": summary(out)}
    # The driver's prices for allocation and mapped memory, without the cache (it serves no call
    # the probes make). The fence calls' prices are the reuse section's (reuse.py).
    for name, prog, keep in (("vmm_cost", "gpu-vmm-cost", 4000),
                             ("vmm_threads", "gpu-vmm-threads", 4000),
                             ("pinned", "gpu-pinned-probe", 4000)):
        path = os.path.join(r.build, "tests", "gpu", prog)
        if os.path.exists(path) and time.monotonic() < deadline - 3:
            rc, out, _ = r.run([path], r.env(False), min(60, deadline - time.monotonic()))
            res[name + ".plain"] = {"exit": rc, "output": out[-keep:], "cache": None}
    return res


def memcheck(r, deadline):
    tool = shutil.which("compute-sanitizer") or next(
        (p for p in glob.glob("/usr/local/cuda*/bin/compute-sanitizer") if os.access(p, os.X_OK)),
        None)
    if r.sim:
        return {"status": "skipped", "why": "needs a GPU"}
    if tool is None:
        return {"status": "skipped", "why": "compute-sanitizer not found"}
    # A clean program (the demo) must stay clean; a kernel that writes past the end of its
    # block (tests/gpu/oob.cu) must be caught, and it only is where the block is the driver's
    # own allocation: the cache must stand aside under the tool.
    res = {"status": "ok"}
    progs = [("demo", [os.path.join(r.build, "tests", "demo", "alloc_loop"), "50",
                       str(64 << 20)], 0)]
    oob = os.path.join(r.build, "tests", "gpu", "gpu-oob")
    if os.path.exists(oob):
        progs.append(("oob", [oob], 1))
    else:
        res["status"] = "failed"
        res["why"] = "tests/gpu/gpu-oob was not built (nvcc missing where the pack was made)"
    for name, argv, want_errors in progs:
        for label, env in (("plain", r.env(False)), ("cached", r.env(True))):
            if time.monotonic() > deadline - 5:
                res["status"] = "failed"
                res["why"] = "out of time before %s.%s" % (name, label)
                break
            rc, out, dt = r.run([tool, "--tool", "memcheck"] + argv, env,
                                min(60, deadline - time.monotonic()))
            m = re.search(r"ERROR SUMMARY: (\d+) error", out)
            errs = int(m.group(1)) if m else None
            res["%s.%s" % (name, label)] = {
                "exit": rc, "errors": errs, "cache_off_line": "cache is off" in out,
                "cache": summary(out), "wall_s": round(dt, 2), "tail": out[-600:]}
            # Under the tool the cache must have stood aside, and said so.
            off_ok = label == "plain" or "cache is off" in out
            if errs is None or (errs > 0) != (want_errors > 0) or not off_ok:
                res["status"] = "failed"
    return res


# ------------------------------------------------------------------------------ the report
def fmt_rate(x):
    return "-" if x is None else ("%.2fM" % (x / 1e6) if x >= 1e6 else "%.0f" % x)


def pair_cell(p, k):
    """One rate of the pairs' table, with a peer's crash in some round beside it."""
    crash = p.get(k + ".peer_error")
    return fmt_rate(p.get(k)) + (" (%s in a round)" % crash if crash else "")


def markdown(rep):
    s = rep["sections"]
    L = ["# cachealloc GPU check (%s mode)" % rep["mode"], ""]
    e = s.get("environment", {})
    L += ["- device: %s" % (e.get("gpu") or "none found"),
          "- host: %s CPUs, kernel %s, %s, Python %s" % (e.get("cpus"), e.get("kernel"),
                                                          e.get("libc"), e.get("python")),
          "- pack: commit %s, made %s; nvcc: %s" % (e.get("pack_commit"), e.get("pack_made"),
                                                   e.get("nvcc")),
          "- frameworks: torch %s, cupy %s, jax %s, numba-cuda %s" % tuple(
              e.get(k, "?") for k in ("torch", "cupy", "jax", "numba")), ""]
    L += ["| section | status | seconds |", "|---|---|---|"]
    for name, v in s.items():
        L.append("| %s | %s | %s |" % (name, v.get("status"), v.get("seconds", "")))
    if isinstance(s.get("reuse"), dict) and "probe" in s["reuse"]:
        L += reuse.markdown(s["reuse"])
    i = s.get("integration")
    if i and "counts" in i:
        c = i["counts"]
        L += ["", "## Integration tests (suite gpu)", "",
              "%d passed, %d failed, %d skipped (%d of them read the simulator's counters)" % (
                  c["passed"], c["failed"], c["skipped"], i["skipped_sim_counters"])]
        for t in i["tests"]:
            if t["status"] == "failed":
                L += ["", "- FAILED %s (exit %s):" % (t["name"], t.get("exit")), "```",
                      t.get("output", "")[-800:], "```"]
    for sec, key in (("frameworks", "workloads"), ("libraries", "libraries")):
        f = s.get(sec)
        if not f or key not in f:
            continue
        L += ["", "## %s: plainly and under the cache" % sec.capitalize(), "",
              "| name | result | step ms plain / cached | wall s plain / cached | served / hits / avoided |",
              "|---|---|---|---|---|"]
        for n, v in f[key].items():
            c = v.get("cache") or {}
            L.append("| %s | %s | %s / %s | %s / %s | %s / %s / %s |" % (
                n, v["status"] + ("" if v["status"] != "skipped" else ": " + str(v.get("why"))),
                fmt_ms(v.get("plain_step_s")), fmt_ms(v.get("cached_step_s")),
                v.get("plain_wall_s", "-"), v.get("cached_wall_s", "-"),
                c.get("served", "-"), c.get("hits", "-"), c.get("avoided", "-")))
    b = s.get("bench")
    if b and "pairs" in b:
        p = b["pairs"]
        L += ["", "## Benchmarks", "", "Cache-hit pairs per second (best of the rounds):", "",
              "| api | who | " + " | ".join("%s thr" % t for t in (1, 2, 4, 8, 16)) + " |",
              "|---|---|---|---|---|---|---|"]
        for api in ("plain", "async"):
            for who in ("cache", "cub"):
                L.append("| %s | %s | %s |" % (api, who, " | ".join(
                    pair_cell(p, "%s.%s.%d" % (who, api, t)) for t in (1, 2, 4, 8, 16))))
            L.append("| %s | plain runtime | %s | | | | |" % (api, fmt_rate(p.get("runtime.%s.1" % api))))
        L += ["", "Trace replays (3 passes, wall of the first, failures):", "",
              "| trace | mode | wall s | failed allocations | later failures | peak reserved MiB |",
              "|---|---|---|---|---|---|"]
        for k, v in b["replays"].items():
            tr, mode = k.rsplit(".", 1)
            pr = v.get("cache_peak_reserved_bytes") or v.get("peak_reserved_bytes")
            L.append("| %s | %s | %s | %s | %s | %s |" % (tr, mode, v.get("wall_s", v.get("error", "-")),
                     v.get("alloc_failures", "-"), v.get("later_failures", "-"),
                     "%.0f" % (int(pr) / 1048576) if pr and pr != "0" else "-"))
        pn = b.get("pinned", {})
        if pn:
            L += ["", "Pinned host memory loops (bench-pinned; fixed: 64 MiB; random: 1 to 8 MiB "
                  "with an asynchronous copy before each free):", "",
                  "| loop | plain pairs/s | cache pairs/s | cache / plain |", "|---|---|---|---|"]
            for loop in ("fixed", "random"):
                p_, c_ = pn.get(loop + ".plain", {}), pn.get(loop + ".cache", {})
                try:
                    ratio = "%.1fx" % (float(c_["pairs_per_s"]) / float(p_["pairs_per_s"]))
                except (KeyError, ValueError, ZeroDivisionError):
                    ratio = "-"
                L.append("| %s | %s | %s | %s |" % (loop, p_.get("pairs_per_s", p_.get("error", "-")),
                         c_.get("pairs_per_s", c_.get("error", "-")), ratio))
        d = b.get("demo", {})
        if d:
            L += ["", "Demo (alloc_loop): plain %s s, cached %s s; cache %s" % (
                d.get("plain", {}).get("wall_s"), d.get("cached", {}).get("wall_s"),
                d.get("cached", {}).get("cache"))]
    pr = s.get("probes")
    if pr and "thread_ctx.plain" in pr:
        L += ["", "## Probes (recorded, not judged)", ""]
        for k, v in pr.items():
            if isinstance(v, dict):
                L += ["%s (exit %s, cache %s):" % (k, v["exit"], v["cache"]), "```",
                      v["output"].strip(), "```"]
    m = s.get("memcheck")
    if m and "demo.plain" in m:
        L += ["", "## compute-sanitizer memcheck (demo: clean; oob: writes past its block)", ""]
        for k, v in m.items():
            if isinstance(v, dict):
                L.append("- %s: exit %s, %s errors, the cache said it is off: %s, cache: %s" % (
                    k, v["exit"], v["errors"], v["cache_off_line"], v["cache"]))
    return "\n".join(L) + "\n"


def fmt_ms(x):
    """A median step, given in seconds, in milliseconds: a sort of a few million keys takes a
    fraction of one, which "%.4f" seconds would round to a digit or two."""
    return "-" if x is None else "%.3f" % (x * 1e3)


def print_summary(rep):
    print("\ncachealloc GPU check, %s mode" % rep["mode"])
    print("%-13s %-8s %7s  %s" % ("section", "status", "seconds", "figures"))
    for name, v in rep["sections"].items():
        fig = ""
        if name == "environment":
            fig = v.get("gpu") or "no GPU"
        elif name == "integration" and "counts" in v:
            c = v["counts"]
            fig = "%d passed, %d failed, %d skipped (%d read the simulator)" % (
                c["passed"], c["failed"], c["skipped"], v["skipped_sim_counters"])
        elif name in ("frameworks", "libraries") and (v.get("workloads") or v.get("libraries")):
            d = v.get("workloads") or v.get("libraries")
            fig = ", ".join("%s %s" % (k, x["status"].split(" ")[0]) for k, x in d.items())
        elif name == "reuse" and "probe" in v:
            fig = reuse.summary_line(v)
        elif name == "bench" and "pairs" in v:
            p = v["pairs"]
            fig = "pairs/s cache 1 thr %s, cub %s, plain runtime %s" % (
                fmt_rate(p.get("cache.plain.1")), fmt_rate(p.get("cub.plain.1")),
                fmt_rate(p.get("runtime.plain.1")))
        elif name == "memcheck" and "demo.cached" in v:
            fig = ", ".join("%s %s errors" % (k, x["errors"]) for k, x in v.items()
                            if isinstance(x, dict))
        elif "why" in v:
            fig = v["why"]
        print("%-13s %-8s %7s  %s" % (name, v.get("status"), v.get("seconds", ""), fig[:100]))


SECTIONS = ("reuse", "integration", "frameworks", "libraries", "memcheck", "bench", "probes")


def write_files(outdir, rep):
    """report.json and report.md; a report error never loses the JSON."""
    with open(os.path.join(outdir, "report.json"), "w") as f:
        json.dump(rep, f, indent=1)
    try:
        text = markdown(rep)
    except Exception as e:  # noqa: BLE001 - the JSON has it all; say why the page is short
        text = "# cachealloc GPU check\n\nreport.md could not be written (%s: %s); see report.json\n" % (
            type(e).__name__, e)
    with open(os.path.join(outdir, "report.md"), "w") as f:
        f.write(text)


def write_report(outdir, rep):
    """report.json, report.md and the summary table."""
    write_files(outdir, rep)
    try:
        print_summary(rep)
    except Exception as e:  # noqa: BLE001
        print("gpu-check: no summary table (%s: %s); see report.json" % (type(e).__name__, e))


def run_check(args):
    os.makedirs(args.outdir, exist_ok=True)
    args.outdir = os.path.abspath(args.outdir)
    only = set(filter(None, args.only.split(",")))
    if only - set(SECTIONS):
        print("gpu-check: unknown section(s) %s; sections: %s" % (
            ",".join(sorted(only - set(SECTIONS))), ",".join(SECTIONS)), file=sys.stderr)
        return 2
    packdir = os.path.abspath(args.pack_dir)
    build = tempfile.mkdtemp(prefix="cachealloc-gpu-check.")
    try:
        with open(os.path.join(packdir, "manifest.json")) as f:
            manifest = json.load(f)
        with tarfile.open(os.path.join(packdir, "build.tar.gz")) as tf:
            if hasattr(tarfile, "data_filter"):
                tf.extractall(build, filter="data")
            else:
                tf.extractall(build)
    except (OSError, ValueError, tarfile.TarError) as e:
        shutil.rmtree(build, ignore_errors=True)
        write_report(args.outdir, {"mode": "sim" if args.sim else "real", "sections": {
            "pack": {"status": "error", "why": "%s: %s" % (type(e).__name__, e)}}})
        return 1
    try:
        return check_build(args, build, manifest, only)
    finally:
        shutil.rmtree(build, ignore_errors=True)


def check_build(args, build, manifest, only):
    if not args.sim:
        # Programs linked with -lcuda carry a RUNPATH to the simulated driver of the build
        # tree: without it there, they load the real one.
        shutil.rmtree(os.path.join(build, "tests", "simdevice"), ignore_errors=True)
    r = Run(args, build, manifest)
    # The reuse figures first (the open question of issue 44, so that a GPU lent for a few
    # minutes answers it), then the verdicts (memcheck is cheap), the other figures last: what
    # runs out of time is reported as skipped "out of time".
    sections = [("environment", 20, environment), ("reuse", 300, reuse.section),
                ("integration", 120, integration),
                ("frameworks", 150, frameworks), ("libraries", 40, libraries),
                ("memcheck", 40, memcheck), ("bench", 150, bench), ("probes", 45, probes)]
    for name, share, fn in sections:
        if only and name not in only and name != "environment":
            continue
        r.section(name, share, fn)
    r.report["total_seconds"] = round(time.monotonic() - r.t0, 1)
    write_report(args.outdir, r.report)
    print("report: %s/report.md and report.json; log: %s/log.txt" % (args.outdir, args.outdir))
    bad = [n for n, v in r.report["sections"].items() if v.get("status") in ("failed", "error")]
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(prog="gpu-check")
    sp = ap.add_subparsers(dest="cmd", required=True)
    p = sp.add_parser("pack")
    p.add_argument("builddir")
    p.add_argument("packdir")
    p.add_argument("traces", nargs="*")
    c = sp.add_parser("run")
    c.add_argument("outdir")
    c.add_argument("--pack-dir", required=True)
    c.add_argument("--sim", action="store_true")
    c.add_argument("--budget", type=float, default=0,
                   help="seconds (default 750; with --sim 1800, so a slow CI machine is no failure)")
    c.add_argument("--jobs", type=int, default=0)
    c.add_argument("--only", default="")
    a = ap.parse_args()
    if a.cmd == "run" and not a.budget:
        a.budget = 1800 if a.sim else 750
    if a.cmd == "pack":
        n, f = pack(a.builddir, a.packdir, a.traces)
        print("gpu-check: packed %d tests and %d files into %s" % (n, f, a.packdir))
        return 0
    return run_check(a)


if __name__ == "__main__":
    sys.exit(main())
