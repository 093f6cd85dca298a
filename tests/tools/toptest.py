"""Helpers of the cachealloc-top tests: fake writer processes and runs of the tool, each test
in its own segment directory (CACHEALLOC_SHM_DIR)."""
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

SKIP = 77
# Sizes fixed by the static assertions of src/stats/abi.h: the record of ABI version 5, and the
# shorter one of versions 1 to 4.
HEADER_SIZE, RECORD_SIZE, RECORD_SIZE_V4 = 1024, 256, 192
OFF_VERSION, OFF_RSIZE = 8, 16


def older_layout(data, version):
    """A segment of this ABI as a writer of version (< 5) lays it out: the same header, each
    record cut to the older size (the words version 5 appended dropped)."""
    out = bytearray(data[:HEADER_SIZE])
    struct.pack_into("<I", out, OFF_VERSION, version)
    struct.pack_into("<I", out, OFF_RSIZE, RECORD_SIZE_V4)
    for at in range(HEADER_SIZE, len(data) - RECORD_SIZE + 1, RECORD_SIZE):
        out += data[at:at + RECORD_SIZE_V4]
    return out


class Env:
    def __init__(self, top, writer):
        self.top = top
        self.writer_exe = writer
        self.dir = tempfile.mkdtemp(prefix="ca-top-test.")
        self.env = dict(os.environ, CACHEALLOC_SHM_DIR=self.dir)
        self.procs = []

    def writer(self, *args):
        """Start a fake writer; return (Popen, pid) once its segment exists."""
        p = subprocess.Popen([self.writer_exe, *map(str, args)], env=self.env,
                             stdout=subprocess.PIPE, text=True)
        self.procs.append(p)
        line = p.stdout.readline()
        if not line.startswith("ready "):
            raise AssertionError("fake writer did not start: %r" % line)
        return p, int(line.split()[1])

    def run(self, *args, check=True, timeout=30):
        r = subprocess.run([self.top, *map(str, args)], env=self.env, capture_output=True,
                           text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError("cachealloc-top %s: exit %d\n%s" % (args, r.returncode, r.stderr))
        return r

    def json(self, *args):
        return json.loads(self.run("--json", *args).stdout)

    def seg_path(self, pid, uid=None):
        return os.path.join(self.dir, "cachealloc.%d.%d" % (os.geteuid() if uid is None else uid, pid))

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                except OSError:
                    pass
                p.kill()
            p.wait()
            if p.stdout:
                p.stdout.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def proc_of(doc, pid):
    for p in doc["processes"]:
        if p["pid"] == pid:
            return p
    return None


def wait_until(pred, timeout=5.0, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


def main(tests, argv):
    """Run every test function with a fresh Env; print a line per test; exit 1 on failure."""
    failed = 0
    for t in tests:
        env = Env(argv[1], argv[2])
        try:
            t(env)
            print("ok   %s" % t.__name__)
        except SkipTest as e:
            print("skip %s: %s" % (t.__name__, e))
        except Exception as e:  # noqa: BLE001 - report every failure and go on
            failed += 1
            print("FAIL %s: %s: %s" % (t.__name__, type(e).__name__, e))
        finally:
            env.close()
        sys.stdout.flush()
    sys.exit(1 if failed else 0)


class SkipTest(Exception):
    pass
