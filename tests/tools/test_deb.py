"""The Debian package: `dpkg-buildpackage -b -us -uc` on a copy of the source tree gives
cachealloc_VERSION_amd64.deb (meson.build's version) with what `meson install` puts in place;
lintian reports no error; unpacked with `dpkg -x` into a temporary root, its launcher preloads
the packaged library and runs the demo program on the simulated driver, served by the cache.
Usage: test_deb.py SOURCE_ROOT VERSION SIMDEV_PATH [DEMO_PROGRAM]
Skipped (77) without dpkg-buildpackage, debhelper or lintian (scripts/setup.sh installs them).
DEMO_PROGRAM: tests/demo's alloc_loop; '' without the CUDA toolkit (the run is skipped)."""
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
MULTIARCH = "usr/lib/x86_64-linux-gnu"
CONTENTS = ["usr/bin/cachealloc", "usr/bin/cachealloc-top", MULTIARCH + "/libcachealloc.so",
            MULTIARCH + "/pkgconfig/cachealloc.pc", "usr/include/cachealloc.h",
            "usr/share/man/man1/cachealloc.1.gz", "usr/share/man/man1/cachealloc-top.1.gz",
            "usr/share/doc/cachealloc/cachealloc-rules.yml",
            "usr/share/doc/cachealloc/prometheus.yml", "usr/share/doc/cachealloc/daemonset.yaml"]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def build(tmp):
    """dpkg-buildpackage writes beside the tree it builds: the copy's parent, tmp."""
    src = os.path.join(tmp, "src")
    shutil.copytree(ROOT, src, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", "build*", "builddir", "_build", "dist", ".mesonpy-*", "__pycache__",
        "gpu-pack", "obj-*"))
    t0 = time.monotonic()
    # Built as Debian builds it, with the distribution's compiler: not the one a test build
    # chose (the fuzzing stage exports CC=clang) or its sanitizers' flags.
    env = {k: v for k, v in os.environ.items()
           if k not in ("CC", "CXX", "CFLAGS", "LDFLAGS", "ASAN_OPTIONS", "UBSAN_OPTIONS",
                        "TSAN_OPTIONS")}
    r = subprocess.run(["dpkg-buildpackage", "-b", "-us", "-uc"], cwd=src, capture_output=True,
                       text=True, timeout=1200, env=env)
    print("package built in %.0f s" % (time.monotonic() - t0))
    if r.returncode != 0:
        fail("dpkg-buildpackage: %s%s" % (r.stdout[-3000:], r.stderr[-3000:]))
    deb = os.path.join(tmp, "cachealloc_%s_amd64.deb" % VERSION)
    if not os.path.isfile(deb):
        fail("no %s; the build left %r" % (os.path.basename(deb), sorted(os.listdir(tmp))))
    return deb


def check_lintian(tmp):
    changes = os.path.join(tmp, "cachealloc_%s_amd64.changes" % VERSION)
    r = subprocess.run(["lintian", changes], capture_output=True, text=True, timeout=600)
    print(r.stdout, end="")
    errors = [line for line in r.stdout.splitlines() if line.startswith("E:")]
    if errors or r.returncode != 0:  # lintian fails on errors alone by default
        fail("lintian reports errors (%d): %s %s" % (r.returncode, errors, r.stderr))


def check_contents(root):
    for path in CONTENTS:
        if not os.path.isfile(os.path.join(root, path)):
            fail("the package has no /%s" % path)


def env_for(tmp, counters):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CACHEALLOC_") and k != "LD_PRELOAD"}
    env.update(LD_LIBRARY_PATH=SIMDEV, CACHEALLOC_SHM_DIR=tmp, SIMDEV_COUNTERS_FILE=counters)
    return env


def check_runs(root, tmp):
    launcher = os.path.join(root, "usr", "bin", "cachealloc")
    lib = os.path.realpath(os.path.join(root, MULTIARCH, "libcachealloc.so"))
    r = subprocess.run([launcher, "printenv", "LD_PRELOAD"], env=env_for(tmp, ""),
                       capture_output=True, text=True)
    if r.returncode != 0 or r.stdout.strip() != lib:
        fail("the packaged launcher preloads %r, not the packaged %r (%s)" %
             (r.stdout.strip(), lib, r.stderr.strip()))
    if not DEMO:
        print("no CUDA toolkit: the packaged launcher was not run on the demo")
        return
    counters = os.path.join(tmp, "demo.counters")
    r = subprocess.run([launcher, DEMO, str(ITERATIONS), str(64 << 20)],
                       env=env_for(tmp, counters), capture_output=True, text=True, timeout=120)
    if r.returncode != 0 or "%d iterations" % ITERATIONS not in r.stdout:
        fail("the demo under the packaged launcher: %d %s%s" % (r.returncode, r.stdout,
                                                                 r.stderr))
    values = dict(re.findall(r"^(\w+)=(\d+)$", open(counters).read(), re.M))
    n = int(values["malloc_calls"]) + int(values["vmm_creates"])
    print("demo under the package: %d loops of 64 MiB, %d driver allocations" % (ITERATIONS, n))
    if not 1 <= n <= 32:  # one growth, in pieces of 2 MiB pages at most 32
        fail("the demo was not served by the packaged library: %d driver allocations" % n)


def main():
    missing = [t for t in ("dpkg-buildpackage", "dh", "lintian", "dpkg") if not shutil.which(t)]
    if missing:
        print("SKIP: %s not installed (scripts/setup.sh)" % ", ".join(missing))
        sys.exit(77)
    with tempfile.TemporaryDirectory(prefix="ca-deb-test.") as tmp:
        t0 = time.monotonic()
        deb = build(tmp)
        check_lintian(tmp)
        root = os.path.join(tmp, "root")
        subprocess.run(["dpkg", "-x", deb, root], check=True)
        check_contents(root)
        check_runs(root, tmp)
        print("package ok (%s) in %.0f s" % (os.path.basename(deb), time.monotonic() - t0))


if __name__ == "__main__":
    main()
