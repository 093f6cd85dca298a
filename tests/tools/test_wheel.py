"""The wheel: `python3 -m build --wheel --no-isolation` on a copy of the source tree gives a wheel
of meson.build's version; pip installs it into a fresh virtual environment (no index), whose
`cachealloc` preloads the wheel's own library with no variable set, and runs the demo program on
the simulated driver, served by the cache; `python3 -m cachealloc` does the same; the module's
library_path() is that library and stats(pid) is the running program's statistics.
Usage: test_wheel.py SOURCE_ROOT VERSION SIMDEV_PATH [DEMO_PROGRAM]
The Python that builds needs the modules build and mesonpy (Debian's python3-build and
python3-mesonpy): this one, else Debian's own /usr/bin/python3; neither: skipped (77).
DEMO_PROGRAM: tests/demo's alloc_loop; '' without the CUDA toolkit (the runs are skipped)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT, VERSION, SIMDEV = sys.argv[1:4]
DEMO = os.path.abspath(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] else ""
ITERATIONS = 200


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def builder_python():
    for py in (sys.executable, "/usr/bin/python3"):
        if py and os.path.exists(py) and subprocess.run(
                [py, "-c", "import build, mesonpy, venv"], capture_output=True).returncode == 0:
            return py
    return None


def copy_tree(dst):
    """The sources alone: meson-python writes into the tree it builds."""
    skip = shutil.ignore_patterns(".git", "build*", "builddir", "_build", "dist", ".mesonpy-*",
                                  "__pycache__", "gpu-pack")
    shutil.copytree(ROOT, dst, ignore=skip, symlinks=True)


def build_wheel(py, tmp):
    src, out = os.path.join(tmp, "src"), os.path.join(tmp, "dist")
    copy_tree(src)
    t0 = time.monotonic()
    r = subprocess.run([py, "-m", "build", "--wheel", "--no-isolation", "--outdir", out, src],
                       capture_output=True, text=True, timeout=1200)
    print("wheel built in %.0f s" % (time.monotonic() - t0))
    if r.returncode != 0:
        fail("python3 -m build --wheel: %s%s" % (r.stdout[-3000:], r.stderr[-3000:]))
    wheels = [w for w in os.listdir(out) if w.endswith(".whl")]
    if len(wheels) != 1 or not wheels[0].startswith("cachealloc-%s-" % VERSION):
        fail("expected one cachealloc-%s-*.whl, got %r" % (VERSION, wheels))
    return os.path.join(out, wheels[0])


def install(py, wheel, tmp):
    venv = os.path.join(tmp, "venv")
    subprocess.run([py, "-m", "venv", venv], check=True)
    r = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-index", "-q", wheel],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail("pip install --no-index: %s" % r.stderr)
    for cmd in ("cachealloc", "cachealloc-top"):
        if not os.access(os.path.join(venv, "bin", cmd), os.X_OK):
            fail("the environment's bin/ has no %s" % cmd)
    return venv


def env_for(tmp, counters):
    """No CACHEALLOC_* and no LD_PRELOAD from outside: the launcher must find the library."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CACHEALLOC_") and k != "LD_PRELOAD"}
    env.update(LD_LIBRARY_PATH=SIMDEV, CACHEALLOC_SHM_DIR=tmp, SIMDEV_COUNTERS_FILE=counters)
    return env


def module(venv, code, env=None):
    r = subprocess.run([os.path.join(venv, "bin", "python"), "-c", code], env=env,
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("the module: %s" % r.stderr)
    return r.stdout.strip()


def check_module(venv, tmp):
    lib = module(venv, "import cachealloc; print(cachealloc.library_path())")
    if not lib.startswith(venv + os.sep) or not os.path.isfile(lib):
        fail("library_path() %r is not a file inside the environment" % lib)
    version = module(venv, "import cachealloc; print(cachealloc.__version__)")
    if version != VERSION:
        fail("the module's version %r is not meson.build's %r" % (version, VERSION))
    launcher = os.path.join(venv, "bin", "cachealloc")
    for cmd in ([launcher], [os.path.join(venv, "bin", "python"), "-m", "cachealloc"]):
        r = subprocess.run(cmd + ["printenv", "LD_PRELOAD"], env=env_for(tmp, ""),
                           capture_output=True, text=True)
        if r.returncode != 0 or r.stdout.strip() != os.path.realpath(lib):
            fail("%s preloads %r, not the wheel's %r (%s)" % (" ".join(cmd[-2:]),
                 r.stdout.strip(), lib, r.stderr.strip()))
        r = subprocess.run(cmd + ["--version"], capture_output=True, text=True)
        if r.stdout.strip() != "cachealloc " + VERSION:
            fail("%s --version says %r" % (" ".join(cmd[-2:]), r.stdout.strip()))
    return lib


def driver_allocations(counters):
    """Memory taken from the driver: plain allocations and virtual-memory handles."""
    values = dict(re.findall(r"^(\w+)=(\d+)$", open(counters).read(), re.M))
    return int(values["malloc_calls"]) + int(values["vmm_creates"])


def check_served(cmd, tmp, name):
    counters = os.path.join(tmp, name + ".counters")
    r = subprocess.run(cmd + [DEMO, str(ITERATIONS), str(64 << 20)], env=env_for(tmp, counters),
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0 or "%d iterations" % ITERATIONS not in r.stdout:
        fail("the demo under %s: %d %s%s" % (name, r.returncode, r.stdout, r.stderr))
    n = driver_allocations(counters)
    print("%s: %d loops of 64 MiB, %d driver allocations" % (name, ITERATIONS, n))
    if not 1 <= n <= 32:  # one growth, in pieces of 2 MiB pages at most 32
        fail("the demo under %s was not served by the cache: %d driver allocations for %d "
             "loops" % (name, n, ITERATIONS))


def check_stats(venv, tmp):
    """The module reads a cached program's statistics while it sleeps after its loop."""
    env = env_for(tmp, os.path.join(tmp, "stats.counters"))
    env["ALLOC_LOOP_HOLD_MS"] = "20000"
    p = subprocess.Popen([os.path.join(venv, "bin", "python"), "-m", "cachealloc", DEMO,
                          "20", str(64 << 20)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        if "iterations" not in p.stdout.readline():
            fail("the held demo printed no loop line")
        time.sleep(0.5)  # one publication period of the statistics thread
        doc = json.loads(module(venv, "import cachealloc, json; "
                                "print(json.dumps(cachealloc.stats(%d)))" % p.pid, env))
    finally:
        p.terminate()
        p.wait()
    if not isinstance(doc, dict) or doc.get("pid") != p.pid:
        fail("stats(%d) gave %r" % (p.pid, doc))
    reserved = sum(d.get("reserved_bytes", 0) for d in doc.get("devices", []))
    if reserved < 64 << 20:
        fail("stats(%d) shows %d reserved bytes, not the demo's 64 MiB: %r" %
             (p.pid, reserved, doc))
    print("stats(%d): %d bytes reserved, api %s" % (p.pid, reserved, doc.get("api")))


def main():
    py = builder_python()
    if py is None:
        print("SKIP: no Python with the build and mesonpy modules (Debian: python3-build, "
              "python3-mesonpy)")
        sys.exit(77)
    with tempfile.TemporaryDirectory(prefix="ca-wheel-test.") as tmp:
        t0 = time.monotonic()
        wheel = build_wheel(py, tmp)
        venv = install(py, wheel, tmp)
        check_module(venv, tmp)
        if not DEMO:
            print("no CUDA toolkit: the wheel's launcher was not run on the demo")
        else:
            check_served([os.path.join(venv, "bin", "cachealloc")], tmp, "cachealloc")
            check_served([os.path.join(venv, "bin", "python"), "-m", "cachealloc"], tmp,
                         "python3 -m cachealloc")
            check_stats(venv, tmp)
        print("wheel ok (%s) in %.0f s" % (os.path.basename(wheel), time.monotonic() - t0))


if __name__ == "__main__":
    main()
