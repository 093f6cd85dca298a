"""The launcher `cachealloc`: options become CACHEALLOC_* variables, LD_PRELOAD gets the library
once and keeps the user's entries, the program's exit status and signal pass through, and its
own failures say one line with the exit status a shell would give.
Usage: test_launcher.py CACHEALLOC SHIM LIBDIR_REL [ASAN_RUNTIME]"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile

LAUNCHER, SHIM = os.path.abspath(sys.argv[1]), os.path.realpath(sys.argv[2])
LIBDIR_REL = sys.argv[3]
# A sanitized library needs its runtime preloaded too: it is the "user's" LD_PRELOAD here.
ASAN = sys.argv[4] if len(sys.argv) > 4 else ""


def base_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CACHEALLOC_") and k != "LD_PRELOAD"}
    if ASAN:
        env["LD_PRELOAD"] = ASAN
        env["ASAN_OPTIONS"] = "detect_leaks=0:verify_asan_link_order=0"
    env.update(extra)
    return env


def run(args, env=None, launcher=LAUNCHER, **kw):
    return subprocess.run([launcher, *args], env=env or base_env(), capture_output=True,
                          text=True, timeout=30, **kw)


def child_env(args, env=None):
    """The environment the launched program saw (env -0), as a dict."""
    r = subprocess.run([LAUNCHER, *args, "--", "env", "-0"], env=env or base_env(),
                       capture_output=True, timeout=30)
    assert r.returncode == 0, r
    return dict(e.split("=", 1) for e in r.stdout.decode().split("\0") if "=" in e)


def expected_preload(*user):
    return ":".join([SHIM] + [p for p in (ASAN, *user) if p])


def one_line(r, status, *words):
    assert r.returncode == status, (r.returncode, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("cachealloc: "), r.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


def test_options_become_variables(tmp):
    os.chdir(tmp)
    env = child_env(["--limit", "6G", "--pool", "binned", "--reuse", "stream",
                     "--prealloc", "1G", "--release-threshold", "75%", "--max-split", "32M",
                     "--trace", "run.csv", "--leak-check=stacks", "--no-stats", "--verbose"])
    want = {"CACHEALLOC_LIMIT": "6G", "CACHEALLOC_POOL": "binned",
            "CACHEALLOC_REUSE": "stream", "CACHEALLOC_PREALLOC": "1G",
            "CACHEALLOC_RELEASE_THRESHOLD": "75%", "CACHEALLOC_MAX_SPLIT": "32M",
            "CACHEALLOC_TRACE": os.path.join(os.getcwd(), "run.csv"),  # made absolute
            "CACHEALLOC_LEAK_CHECK": "stacks", "CACHEALLOC_STATS": "0",
            "CACHEALLOC_VERBOSE": "1"}
    got = {k: v for k, v in env.items() if k.startswith("CACHEALLOC_")}
    assert got == want, got
    # --opt=value forms, a bare --leak-check, and nothing set that was not asked for
    env = child_env(["--limit=75%", "--leak-check", "--trace=/abs/t.csv"])
    got = {k: v for k, v in env.items() if k.startswith("CACHEALLOC_")}
    assert got == {"CACHEALLOC_LIMIT": "75%", "CACHEALLOC_LEAK_CHECK": "1",
                   "CACHEALLOC_TRACE": "/abs/t.csv"}, got
    # an option overrides the variable the user had; other variables of the user stay
    env = child_env(["--pool", "none"], base_env(CACHEALLOC_POOL="split",
                                                 CACHEALLOC_REUSE="stream"))
    assert env["CACHEALLOC_POOL"] == "none" and env["CACHEALLOC_REUSE"] == "stream", env


def test_program_options_are_its_own(tmp):
    r = run(["sh", "-c", 'echo "$@"; echo "limit=${CACHEALLOC_LIMIT:-unset}"', "x",
             "--limit", "6G", "--verbose"])
    assert r.returncode == 0 and r.stdout == "--limit 6G --verbose\nlimit=unset\n", r


def test_preload_first_and_once(tmp):
    assert child_env([])["LD_PRELOAD"] == expected_preload()
    user = "/nonexistent/user-preload.so"  # ld.so says one line about it and goes on
    env = child_env([], base_env(LD_PRELOAD=":".join(p for p in (ASAN, user) if p)))
    assert env["LD_PRELOAD"] == expected_preload(user), env["LD_PRELOAD"]
    # already named, by its path or as the same file under another name: left as it was
    alias = os.path.join(tmp, "alias.so")
    os.symlink(SHIM, alias)
    for had in (":".join(p for p in (SHIM, ASAN) if p), " ".join(p for p in (ASAN, alias) if p)):
        env = child_env([], base_env(LD_PRELOAD=had))
        assert env["LD_PRELOAD"] == had, (had, env["LD_PRELOAD"])
    # a launcher under a launcher loads it once
    r = run(["--verbose", "--", LAUNCHER, "--limit", "1G", "--", "printenv", "LD_PRELOAD"])
    assert r.returncode == 0 and r.stdout.strip() == expected_preload(), r


def test_exit_status_and_signal_pass_through(tmp):
    assert run(["sh", "-c", "exit 7"]).returncode == 7
    assert run(["true"]).returncode == 0
    r = run(["sh", "-c", "kill -TERM $$"])
    assert r.returncode == -signal.SIGTERM, r.returncode  # died by the signal itself
    # exec, not fork: the program is the launcher's own process
    p = subprocess.Popen([LAUNCHER, "sh", "-c", "echo $$"], env=base_env(),
                         stdout=subprocess.PIPE, text=True)
    out, _ = p.communicate(timeout=30)
    assert int(out) == p.pid, (out, p.pid)


def test_not_found_127_not_executable_126(tmp):
    one_line(run(["no-such-program-ca"]), 127, "no-such-program-ca", "not found")
    one_line(run([os.path.join(tmp, "missing")]), 127, "No such file")
    plain = os.path.join(tmp, "plain.txt")
    with open(plain, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(plain, 0o644)  # no execute bit: refused even to root
    one_line(run([plain]), 126, "cannot run", plain)
    one_line(run([tmp]), 126, "cannot run")


def test_usage_errors_exit_2(tmp):
    marker = os.path.join(tmp, "ran")
    prog = ["touch", marker]
    one_line(run(["--bogus", *prog]), 2, "unknown option --bogus")
    one_line(run(["-x", *prog]), 2, "unknown option -x")
    one_line(run(["--re", "1", *prog]), 2, "ambiguous option --re")
    one_line(run(["--limit"]), 2, "--limit needs a value")
    one_line(run(["--limit", "6Q", *prog]), 2, "--limit", "'6Q' is not a size", "accepted:")
    one_line(run(["--pool=big", *prog]), 2, "--pool", "accepted: split, binned, none")
    one_line(run(["--leak-check=maybe", *prog]), 2, "--leak-check")
    one_line(run(["--trace=", *prog]), 2, "--trace", "empty")
    one_line(run([]), 2, "no program to run")
    one_line(run(["--verbose", "--"]), 2, "no program to run")
    assert not os.path.exists(marker), "the program ran after a usage error"


def test_help_and_version(tmp):
    r = run(["--help"])
    assert r.returncode == 0 and r.stdout.startswith("usage: cachealloc ") and not r.stderr
    for opt in ("--limit", "--pool", "--reuse", "--prealloc", "--release-threshold",
                "--trace", "--leak-check", "--no-stats", "--verbose", "--version"):
        assert opt in r.stdout, opt
    assert all(len(line) < 80 for line in r.stdout.splitlines())
    r = run(["--version"])
    assert r.returncode == 0 and r.stdout.startswith("cachealloc ") and len(r.stdout.split()) == 2


def test_library_found_beside_itself(tmp):
    """An installed tree moved anywhere: bin/cachealloc finds <libdir>/libcachealloc.so by the
    path between them, also through a symbolic link to the launcher."""
    prefix = os.path.join(tmp, "moved prefix")  # spaces in the launcher's own path are fine
    bindir = os.path.join(prefix, "bin")
    os.makedirs(bindir)
    launcher = os.path.join(bindir, "cachealloc")
    shutil.copy(LAUNCHER, launcher)
    r = run(["true"], launcher=launcher)
    one_line(r, 125, "no libcachealloc.so at")
    libdir = os.path.normpath(os.path.join(bindir, LIBDIR_REL))
    if not libdir.startswith(prefix):
        return  # a libdir outside the prefix is named by its own absolute path
    os.makedirs(libdir, exist_ok=True)
    lib = os.path.join(libdir, "libcachealloc.so")
    shutil.copy(SHIM, lib)
    r = run(["printenv", "LD_PRELOAD"], launcher=launcher)
    # a path with a space cannot be preloaded: one clear line rather than a silent no-op
    one_line(r, 125, "colon or a space")
    os.rename(prefix, os.path.join(tmp, "prefix"))
    launcher = os.path.join(tmp, "prefix", "bin", "cachealloc")
    lib = os.path.realpath(os.path.join(tmp, "prefix", os.path.relpath(lib, prefix)))
    link = os.path.join(tmp, "link-to-launcher")
    os.symlink(launcher, link)
    for exe in (launcher, link):
        r = run(["printenv", "LD_PRELOAD"], launcher=exe)
        assert r.returncode == 0, r
        assert r.stdout.strip() == ":".join(p for p in (lib, ASAN) if p), r.stdout


def main():
    tests = [test_options_become_variables, test_program_options_are_its_own,
             test_preload_first_and_once, test_exit_status_and_signal_pass_through,
             test_not_found_127_not_executable_126, test_usage_errors_exit_2,
             test_help_and_version, test_library_found_beside_itself]
    failed = 0
    here = os.getcwd()
    for t in tests:
        tmp = tempfile.mkdtemp(prefix="ca-launcher-test.")
        try:
            t(tmp)
            print("ok   %s" % t.__name__)
        except Exception as e:  # noqa: BLE001 - report every failure and go on
            failed += 1
            print("FAIL %s: %s: %r" % (t.__name__, type(e).__name__, e))
        finally:
            os.chdir(here)
            shutil.rmtree(tmp, ignore_errors=True)
        sys.stdout.flush()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
