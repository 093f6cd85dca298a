"""The live view in a real terminal: tmux runs cachealloc-top, keys are sent, the pane is
captured.  Usage: test_live_tmux.py CACHEALLOC_TOP FAKE_WRITER"""
import os
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toptest import SKIP, main, proc_of, wait_until  # noqa: E402

MIB = 1 << 20


class Tmux:
    def __init__(self, env):
        self.sock = os.path.join(env.dir, "tmux.sock")
        self.env = env

    def cmd(self, *args):
        return subprocess.run(["tmux", "-S", self.sock, *args], env=self.env.env,
                              capture_output=True, text=True, timeout=10)

    def start(self, *top_args):
        # TERM set for ncurses inside; a fixed size so that every column fits.
        r = self.cmd("-f", "/dev/null", "new-session", "-d", "-x", "200", "-y", "40",
                     "env", "TERM=screen", self.env.top, *top_args)
        assert r.returncode == 0, r.stderr

    def screen(self):
        return self.cmd("capture-pane", "-p").stdout

    def keys(self, *k):
        self.cmd("send-keys", *k)

    def stop(self):
        self.cmd("kill-server")


def rows_of(screen, pids):
    """The pids of table rows, top to bottom."""
    out = []
    for line in screen.splitlines():
        f = line.split()
        if f and f[0].isdigit() and int(f[0]) in pids:
            out.append(int(f[0]))
    return out


def test_live_view(env):
    _, small = env.writer("--mib", 8)
    _, big = env.writer("--mib", 64)
    t = Tmux(env)
    t.start("--delay", "0.2")
    try:
        pids = {small, big}
        assert wait_until(lambda: len(rows_of(t.screen(), pids)) == 2, 10), t.screen()
        s = t.screen()
        assert "sort: RESERVED" in s and "fake_writer" in s and "DEV0" in s, s
        # the device bar, against the device's memory once the writers published it
        assert wait_until(lambda: "used of 16.0 GiB; the cache holds 72.0 MiB" in t.screen(),
                          10), t.screen()
        # sorted by reserved, biggest first
        assert rows_of(s, pids) == [big, small], s
        # '<' walks back through the columns: RESERVED, API, DEV, USER, PID
        t.keys("<")
        t.keys("<")
        t.keys("<")
        t.keys("<")
        assert wait_until(lambda: "sort: PID" in t.screen(), 5), t.screen()
        assert rows_of(t.screen(), pids) == sorted(pids), t.screen()
        t.keys(">")
        t.keys(">")
        t.keys(">")
        t.keys(">")  # and '>' forward again to RESERVED
        assert wait_until(lambda: "sort: RESERVED" in t.screen(), 5), t.screen()
        assert rows_of(t.screen(), pids) == [big, small]
        # help opens and closes
        t.keys("h")
        assert wait_until(lambda: "this help" in t.screen(), 5), t.screen()
        t.keys("x")
        assert wait_until(lambda: "this help" not in t.screen(), 5), t.screen()
        # select the second row (small) and reclaim it
        t.keys("j")
        t.keys("r")
        assert wait_until(lambda: "pid %d released 2.00 MiB" % small in t.screen(), 10), t.screen()
        doc = env.json()
        assert proc_of(doc, small)["devices"][0]["cached_bytes"] == 0
        assert proc_of(doc, big)["devices"][0]["cached_bytes"] == 16 * MIB
        # pause
        t.keys("p")
        assert wait_until(lambda: "[paused]" in t.screen(), 5), t.screen()
        t.keys("q")
        assert wait_until(lambda: t.cmd("has-session").returncode != 0, 5), "q did not quit"
    finally:
        t.stop()


if __name__ == "__main__":
    if shutil.which("tmux") is None:
        print("skip: tmux is not installed")
        sys.exit(SKIP)
    main([test_live_view], sys.argv)
