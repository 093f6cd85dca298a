"""cachealloc-top --json, --once, --prometheus, --pid, --reclaim and stale segments, against
fake writer processes.  Usage: test_top_cli.py CACHEALLOC_TOP FAKE_WRITER"""
import os
import signal
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_openmetrics  # noqa: E402
from toptest import main, proc_of, wait_until  # noqa: E402

MIB = 1 << 20
JSON_DEVICE_KEYS = ["device", "reserved_bytes", "allocated_bytes", "cached_bytes",
                    "pending_bytes", "peak_reserved_bytes", "peak_allocated_bytes",
                    "alloc_calls", "free_calls", "cache_hits", "driver_alloc_calls",
                    "driver_free_calls", "oom_recoveries", "oom_failures",
                    "largest_free_block_bytes"]


def test_json_shape_and_values(env):
    _, a = env.writer("--devices", 2, "--mib", 64)
    _, b = env.writer("--devices", 1, "--mib", 8, "--api", "hip")
    doc = env.json()
    assert list(doc.keys()) == ["processes"]
    pa, pb = proc_of(doc, a), proc_of(doc, b)
    assert pa and pb, doc
    assert list(pa.keys()) == ["pid", "uid", "command", "api", "alive", "devices"], pa.keys()
    assert pa["uid"] == os.geteuid() and pa["alive"] is True and pa["api"] == "cuda"
    assert pb["api"] == "hip"
    assert "fake_writer" in pa["command"] and "--mib 64" in pa["command"], pa["command"]
    assert [d["device"] for d in pa["devices"]] == [0, 1]
    d1 = pa["devices"][1]
    assert list(d1.keys()) == JSON_DEVICE_KEYS, list(d1.keys())
    assert d1["reserved_bytes"] == 128 * MIB and d1["allocated_bytes"] == 64 * MIB
    assert d1["cached_bytes"] == 32 * MIB and d1["pending_bytes"] == 32 * MIB
    assert d1["alloc_calls"] == 2000 and d1["driver_alloc_calls"] == 20
    assert d1["cache_hits"] == 1980 and d1["oom_recoveries"] == 3 and d1["oom_failures"] == 1
    assert d1["largest_free_block_bytes"] == 32 * MIB and d1["peak_reserved_bytes"] == 128 * MIB


def test_pid_filter(env):
    _, a = env.writer()
    _, b = env.writer()
    doc = env.json("--pid", b)
    assert [p["pid"] for p in doc["processes"]] == [b], doc
    assert env.run("--pid", "x", check=False).returncode == 2


def test_once_table(env):
    _, a = env.writer("--devices", 2, "--mib", 64)
    out = env.run("--once").stdout
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["PID", "USER", "DEV", "API"], lines[0]
    rows = [line.split() for line in lines[1:] if line.split()[0] == str(a)]
    assert len(rows) == 2, out
    assert rows[0][2] == "0" and rows[1][2] == "1"
    assert " ".join(rows[1][4:6]) == "128 MiB", out  # reserved of device 1, human size
    assert "fake_writer" in out
    assert "99.0" in out  # hit rate: 990 of 1000


def test_prometheus(env):
    _, a = env.writer("--devices", 2, "--mib", 16, "--config", 'weird "cmd" \\ line')
    text = env.run("--prometheus").stdout
    samples = check_openmetrics.check(text)
    def get(name, dev):
        for (n, labels), v in samples.items():
            lab = dict(labels)
            if n == name and lab["pid"] == str(a) and lab["device"] == str(dev):
                assert "fake_writer" in lab["command"]
                return v
        raise AssertionError("no sample %s device %d in\n%s" % (name, dev, text))
    assert get("cachealloc_reserved_bytes", 1) == 32 * MIB
    assert get("cachealloc_alloc_calls_total", 0) == 1000
    assert get("cachealloc_oom_recoveries_total", 1) == 3
    assert "# TYPE cachealloc_reserved_bytes gauge" in text
    assert "# TYPE cachealloc_alloc_calls counter" in text
    # the checker itself rejects broken text
    for bad in (text[:-6], text.replace("# TYPE cachealloc_reserved_bytes gauge\n", ""),
                text.replace('device="1"', 'device="1"x', 1)):
        try:
            check_openmetrics.check(bad)
        except ValueError:
            continue
        raise AssertionError("checker accepted broken text")


def test_prometheus_escapes_command(env):
    # The command line is this writer's argv: quotes and backslashes must be escaped.
    _, a = env.writer("--api", 'cu"da\\x')
    text = env.run("--prometheus").stdout
    samples = check_openmetrics.check(text)
    commands = {dict(k[1])["command"] for k in samples}
    assert any('cu"da\\x' in c for c in commands), commands


def test_reclaim_lowers_reserved(env):
    _, a = env.writer("--devices", 2, "--mib", 64)
    before = proc_of(env.json(), a)["devices"]
    r = env.run("--reclaim", a)
    assert r.stdout.strip() == "pid %d released %d bytes (48.0 MiB)" % (a, 48 * MIB), r.stdout
    after = proc_of(env.json(), a)["devices"]
    for b, c in zip(before, after):
        assert c["reserved_bytes"] == b["reserved_bytes"] - b["cached_bytes"], (b, c)
        assert c["cached_bytes"] == 0
    # a second request is answered too, releasing nothing more
    r = env.run("--reclaim", a)
    assert "released 0 bytes" in r.stdout, r.stdout


def test_reclaim_without_answer_fails(env):
    p, a = env.writer()
    os.kill(a, signal.SIGSTOP)  # alive, but its monitor thread cannot answer
    try:
        t0 = time.monotonic()
        r = env.run("--reclaim", a, check=False)
        assert r.returncode != 0 and "no answer" in r.stderr, (r.returncode, r.stderr)
        assert time.monotonic() - t0 >= 4.5  # it did wait for the answer
    finally:
        os.kill(a, signal.SIGCONT)
    r = env.run("--reclaim", 999999999, check=False)
    assert r.returncode != 0 and r.stdout == "", r
    assert env.run("--reclaim", "abc", check=False).returncode == 2


def test_killed_writer_is_dead_then_cleaned(env):
    p, a = env.writer()
    _, b = env.writer()
    p.kill()
    p.wait()
    assert os.path.exists(env.seg_path(a))
    doc = env.json()
    assert proc_of(doc, a)["alive"] is False
    assert proc_of(doc, b)["alive"] is True
    assert not os.path.exists(env.seg_path(a))
    assert os.path.exists(env.seg_path(b))
    doc = env.json()
    assert proc_of(doc, a) is None and proc_of(doc, b) is not None
    # the --once table marks it dead as well
    p2, c = env.writer()
    p2.kill()
    p2.wait()
    out = env.run("--once").stdout
    line = [l for l in out.splitlines() if l.split()[0] == str(c)][0]
    assert "dead" in line, out
    # and --prometheus leaves dead processes out
    p3, d = env.writer()
    p3.kill()
    p3.wait()
    assert 'pid="%d"' % d not in env.run("--prometheus").stdout


def test_reused_pid_is_dead(env):
    # A segment naming a live pid (this test's own) whose start time is another process's.
    _, a = env.writer()
    with open(env.seg_path(a), "rb") as f:
        data = bytearray(f.read())
    me = os.getpid()
    data[32:40] = me.to_bytes(8, "little")
    path = env.seg_path(me)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, 0o600)
    doc = env.json()
    assert proc_of(doc, me)["alive"] is False, doc
    assert not os.path.exists(path)
    assert proc_of(doc, a)["alive"] is True


def test_terminated_writer_removes_segment(env):
    p, a = env.writer()
    assert os.path.exists(env.seg_path(a))
    mode = os.stat(env.seg_path(a)).st_mode & 0o7777
    assert mode == 0o600, oct(mode)
    p.terminate()
    assert p.wait(timeout=10) == 0
    assert not os.path.exists(env.seg_path(a))


def test_empty_and_missing_dir(env):
    assert env.json() == {"processes": []}
    env.env["CACHEALLOC_SHM_DIR"] = os.path.join(env.dir, "missing")
    r = env.run("--json")
    assert r.stdout.strip() == '{"processes":[]}', r.stdout
    assert "--once" in env.run(check=False).stderr  # live view without a terminal
    assert env.run("--help").stdout.startswith("usage:")
    assert env.run("--bogus", check=False).returncode == 2


if __name__ == "__main__":
    main([test_json_shape_and_values, test_pid_filter, test_once_table, test_prometheus,
          test_prometheus_escapes_command, test_reclaim_lowers_reserved,
          test_reclaim_without_answer_fails, test_killed_writer_is_dead_then_cleaned,
          test_reused_pid_is_dead, test_terminated_writer_removes_segment,
          test_empty_and_missing_dir], sys.argv)
