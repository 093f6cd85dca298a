"""`meson install --destdir` gives a working tree: the library, both commands, cachealloc.h with
its pkg-config file, and both man pages; the installed launcher preloads the installed library
(never the build tree's) into a CUDA program on the simulated driver, which is served with the
options it was given.
Usage: test_install.py MESON BUILD_ROOT PREFIX BINDIR LIBDIR INCLUDEDIR MANDIR CC SIMDEV_PATH
                       [CUDA_PROGRAM] [ASAN_RUNTIME]
CUDA_PROGRAM: the integration tests' -lcuda loop (1000 x 64 MiB); '' without the toolkit."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

(MESON, BUILD, PREFIX, BINDIR, LIBDIR, INCLUDEDIR, MANDIR, CC, SIMDEV) = sys.argv[1:10]
PROGRAM = sys.argv[10] if len(sys.argv) > 10 else ""
ASAN = sys.argv[11] if len(sys.argv) > 11 else ""


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def under(root, *parts):
    """root/PREFIX/part...; a part that is absolute stands for itself under root."""
    path = root
    for p in (PREFIX, *parts):
        path = os.path.join(path, p.lstrip("/")) if p.startswith("/") else os.path.join(path, p)
    return path


def program_env(shm):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CACHEALLOC_") and k != "LD_PRELOAD"}
    env.update(LD_LIBRARY_PATH=SIMDEV, CACHEALLOC_SHM_DIR=shm)
    if ASAN:  # a sanitized library needs its runtime: the user's own LD_PRELOAD here
        env.update(LD_PRELOAD=ASAN, ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0")
    return env


def check_layout(root):
    files = {
        "launcher": under(root, BINDIR, "cachealloc"),
        "top": under(root, BINDIR, "cachealloc-top"),
        "library": under(root, LIBDIR, "libcachealloc.so"),
        "header": under(root, INCLUDEDIR, "cachealloc.h"),
        "pkg-config file": under(root, LIBDIR, "pkgconfig", "cachealloc.pc"),
        "launcher man page": under(root, MANDIR, "man1", "cachealloc.1"),
        "top man page": under(root, MANDIR, "man1", "cachealloc-top.1"),
    }
    for what, path in files.items():
        if not os.path.isfile(path):
            fail("no %s at %s" % (what, path))
    for exe in ("launcher", "top"):
        if not os.access(files[exe], os.X_OK):
            fail("%s is not executable" % files[exe])
    return files


def check_man_pages(files):
    groff = shutil.which("groff")
    if groff is None:
        print("groff not found: man pages not rendered")
        return
    for page in ("launcher man page", "top man page"):
        r = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z", files[page]],
                           capture_output=True, text=True)
        if r.returncode != 0 or r.stderr:
            fail("%s does not render cleanly: %s" % (files[page], r.stderr))


def check_pkg_config(root, files, tmp):
    """The header compiles and links with what the .pc file says (prefix moved to destdir)."""
    if shutil.which("pkg-config") is None:
        print("pkg-config not found: cachealloc.pc not used")
        return
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(files["pkg-config file"]))
    r = subprocess.run(["pkg-config", "--define-variable=prefix=" + under(root),
                        "--cflags", "--libs", "cachealloc"], env=env, capture_output=True,
                       text=True)
    if r.returncode != 0:
        fail("pkg-config cachealloc: " + r.stderr)
    flags = r.stdout.split()
    if "-I" + os.path.dirname(files["header"]) not in flags:
        fail("pkg-config gives no -I for the installed header: %r" % flags)
    r = subprocess.run(["pkg-config", "--define-variable=prefix=" + under(root),
                        "--variable=library", "cachealloc"], env=env, capture_output=True,
                       text=True)
    if r.stdout.strip() != files["library"]:
        fail("pkg-config's library is %r, not %r" % (r.stdout.strip(), files["library"]))
    src = os.path.join(tmp, "use_header.c")
    with open(src, "w") as f:
        f.write("#include <cachealloc.h>\nint main(void) {\n    cachealloc_stats s;\n"
                "    return cachealloc_get_stats(0, &s); /* 0 without the library */\n}\n")
    exe = os.path.join(tmp, "use_header")
    r = subprocess.run([CC, src, "-o", exe, *flags], capture_output=True, text=True)
    if r.returncode != 0:
        fail("the installed header does not compile with pkg-config's flags: " + r.stderr)
    if subprocess.run([exe]).returncode != 0:
        fail("cachealloc_get_stats without the library did not answer 0")


def check_launcher_runs_cuda(files, tmp):
    launcher, lib = files["launcher"], os.path.realpath(files["library"])
    env = program_env(tmp)
    r = subprocess.run([launcher, "printenv", "LD_PRELOAD"], env=env, capture_output=True,
                       text=True)
    want = ":".join(p for p in (lib, ASAN) if p)
    if r.returncode != 0 or r.stdout.strip() != want:
        fail("installed launcher preloads %r, not the installed %r (%s)" %
             (r.stdout.strip(), want, r.stderr))
    r = subprocess.run([files["top"], "--json"], env=env, capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.startswith('{"processes":'):
        fail("installed cachealloc-top --json: %s" % r.stderr)
    if not PROGRAM:
        print("no CUDA toolkit: the installed launcher was not run on a CUDA program")
        return
    r = subprocess.run([launcher, "--limit", "256M", "--verbose", "--", PROGRAM], env=env,
                       capture_output=True, text=True, timeout=120)
    print(r.stdout + r.stderr)
    if r.returncode != 0:
        fail("the CUDA loop under the installed launcher exited %d" % r.returncode)
    # served: one growth from the driver for 1000 loops (its pieces: 32 pages of 64 MiB at
    # most), with the options given
    m = re.search(r"^1000 iterations under the shim: (\d+) driver allocations", r.stdout, re.M)
    if not m or not 1 <= int(m.group(1)) <= 32:
        fail("the loop was not served by the cache")
    if not re.search(r"^cachealloc \S+: serving CUDA at the driver API.* limit=256M", r.stderr,
                     re.M):
        fail("no verbose start line naming the limit")
    if "cuda: 1000 allocations served" not in r.stderr:
        fail("no verbose summary line")
    # the limit is enforced: a 64 MiB allocation cannot fit under 32M
    r = subprocess.run([launcher, "--limit", "32M", PROGRAM], env=env, capture_output=True,
                       text=True, timeout=120)
    if r.returncode == 0 or "limit 33554432" not in r.stderr or \
            not re.search(r"p_alloc\(.*\) = 2$", r.stderr, re.M):  # CUDA_ERROR_OUT_OF_MEMORY
        fail("--limit 32M did not refuse the 64 MiB allocation: %d %s" %
             (r.returncode, r.stderr))


def main():
    with tempfile.TemporaryDirectory(prefix="ca-install-test.") as tmp:
        root = os.path.join(tmp, "destdir")
        r = subprocess.run([MESON, "install", "-C", BUILD, "--destdir", root, "--no-rebuild",
                            "--quiet"], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            fail("meson install: %s%s" % (r.stdout, r.stderr))
        files = check_layout(root)
        check_man_pages(files)
        check_pkg_config(root, files, tmp)
        check_launcher_runs_cuda(files, tmp)
    print("install ok")


if __name__ == "__main__":
    main()
