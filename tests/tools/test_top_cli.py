"""cachealloc-top --json, --once, --prometheus, --pid, --reclaim and stale segments, against
fake writer processes.  Usage: test_top_cli.py CACHEALLOC_TOP FAKE_WRITER"""
import os
import signal
import struct
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_openmetrics  # noqa: E402
from toptest import main, older_layout, proc_of, wait_until  # noqa: E402

MIB = 1 << 20
JSON_PROCESS_KEYS = ["pid", "uid", "command", "api", "alive", "responding", "heartbeat_age_ms",
                     "devices", "host"]
JSON_DEVICE_KEYS = ["device", "reserved_bytes", "allocated_bytes", "cached_bytes",
                    "pending_bytes", "peak_reserved_bytes", "peak_allocated_bytes",
                    "alloc_calls", "free_calls", "cache_hits", "driver_alloc_calls",
                    "driver_free_calls", "oom_recoveries", "oom_failures",
                    "largest_free_block_bytes", "sync_wait_ns", "fence_wait_ns",
                    "fence_waits", "grow_ns", "growths", "device_total_bytes", "device_free_bytes",
                    "given_to_neighbours_bytes", "uuid", "pci_bus_id"]
# Offsets fixed by the static assertions of src/stats/abi.h.
OFF_VERSION, OFF_PID, OFF_START, OFF_BEAT = 8, 32, 40, 48


def mem_published(env, pid):
    """Wait for the writer's monitor thread to publish its devices' memory (every 250 ms)."""
    def ready():
        p = proc_of(env.json(), pid)
        return p is not None and all(d["device_total_bytes"] for d in p["devices"])
    assert wait_until(ready), "no device memory published by %d" % pid


def my_start_time():
    with open("/proc/self/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def as_this_process(env, pid, **patch):
    """A copy of pid's segment that names this (live) test process, patched; returns the pid."""
    with open(env.seg_path(pid), "rb") as f:
        data = bytearray(f.read())
    me = os.getpid()
    struct.pack_into("<QQ", data, OFF_PID, me, my_start_time())
    if "version" in patch:  # laid out as a writer of that version does
        data = older_layout(data, patch["version"])
    if "beat_ns" in patch:
        struct.pack_into("<Q", data, OFF_BEAT, patch["beat_ns"])
    path = env.seg_path(me)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, 0o600)
    return me


def table_rows(out, pid):
    """The --once table rows of pid (the device bar lines above the table start with DEV)."""
    return [line.split() for line in out.splitlines() if line.split()[:1] == [str(pid)]]


def column(out, pid, title):
    """pid's cells of the right-aligned column title in a --once table."""
    head = [l for l in out.splitlines() if l.split()[:2] == ["PID", "USER"]][0]
    end = head.index(" " + title) + 1 + len(title)
    return [l[:end].split()[-1] for l in out.splitlines() if l.split()[:1] == [str(pid)]]


def test_json_shape_and_values(env):
    _, a = env.writer("--devices", 2, "--mib", 64)
    _, b = env.writer("--devices", 1, "--mib", 8, "--api", "hip")
    mem_published(env, a)
    doc = env.json()
    assert list(doc.keys()) == ["processes"]
    pa, pb = proc_of(doc, a), proc_of(doc, b)
    assert pa and pb, doc
    assert list(pa.keys()) == JSON_PROCESS_KEYS, pa.keys()
    assert pa["uid"] == os.geteuid() and pa["alive"] is True and pa["api"] == "cuda"
    assert pa["responding"] is True and 0 <= pa["heartbeat_age_ms"] < 5000, pa
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
    # the device as the writer's driver reports it: 16 GiB, an eighth used by others
    assert d1["device_total_bytes"] == 16384 * MIB, d1
    assert d1["device_free_bytes"] == (16384 - 2048 - 128) * MIB, d1
    # the device's names as its driver gives them (asked once by the writer's monitor thread)
    assert d1["uuid"] == "GPU-96be9fff-fdfd-9b87-88d4-fe5b9a012101", d1
    assert d1["pci_bus_id"] == "00000000:3C:00.0", d1
    # the time the cache's own waits cost (ABI version 5), in nanoseconds
    assert d1["sync_wait_ns"] == 1500000001 and d1["fence_wait_ns"] == 500000000, d1
    assert d1["fence_waits"] == 5 and d1["grow_ns"] == 4000000 and d1["growths"] == 20, d1


def test_pid_filter(env):
    _, a = env.writer()
    _, b = env.writer()
    doc = env.json("--pid", b)
    assert [p["pid"] for p in doc["processes"]] == [b], doc
    assert env.run("--pid", "x", check=False).returncode == 2


def test_once_table(env):
    _, a = env.writer("--devices", 2, "--mib", 64, "--total-mib", 1024)
    mem_published(env, a)
    out = env.run("--once").stdout
    lines = out.splitlines()
    header = [i for i, line in enumerate(lines) if line.split()[:4] == ["PID", "USER", "DEV", "API"]]
    assert len(header) == 1, out
    rows = table_rows(out, a)
    assert len(rows) == 2, out
    assert rows[0][2] == "0" and rows[1][2] == "1"
    assert " ".join(rows[1][4:6]) == "128 MiB", out  # reserved of device 1, human size
    assert "fake_writer" in out
    assert "99.0" in out  # hit rate: 990 of 1000
    # WAITMS: the waits of each device in milliseconds: 1500.000001 + 250 + 2, + 500 + 4
    assert column(out, a, "WAITMS") == ["1752.0", "2004.0"], out
    # above the table, a bar per device against the device's memory, as nvtop draws it:
    # device 1 of 1 GiB: 64 MiB allocated (|), 64 MiB cached and pending (/), 128 MiB used by
    # others (#), 40 characters wide
    bars = lines[:header[0]]
    assert bars[-1] == "" and len(bars) == 3, out
    assert bars[1] == ("DEV1   [|||///####" + " " * 30 + "] 256 MiB used of 1.00 GiB; "
                       "the cache holds 128 MiB (12.5%), 64.0 MiB of it free"), bars[1]
    assert bars[0].startswith("DEV0   [") and "192 MiB used of 1.00 GiB" in bars[0], bars[0]


def test_prometheus(env):
    _, a = env.writer("--devices", 2, "--mib", 16, "--config", 'weird "cmd" \\ line')
    # A device is exported once the writer's monitor thread has named it (its first round).
    mem_published(env, a)
    text = env.run("--prometheus").stdout
    samples = check_openmetrics.check(text)
    def get(name, dev):
        for (n, labels), v in samples.items():
            lab = dict(labels)
            if n == name and lab.get("pid") == str(a) and lab["device"] == str(dev):
                assert "fake_writer" in lab["command"]
                return v
        raise AssertionError("no sample %s device %d in\n%s" % (name, dev, text))
    assert get("cachealloc_reserved_bytes", 1) == 32 * MIB
    assert get("cachealloc_alloc_calls_total", 0) == 1000
    assert get("cachealloc_oom_recoveries_total", 1) == 3
    assert get("cachealloc_device_total_bytes", 1) == 16384 * MIB
    assert get("cachealloc_device_free_bytes", 1) == (16384 - 2048 - 32) * MIB
    # the waits, in seconds (the writer publishes nanoseconds)
    assert get("cachealloc_sync_wait_seconds_total", 1) == 1.500000001
    assert get("cachealloc_fence_wait_seconds_total", 1) == 0.5
    assert get("cachealloc_grow_seconds_total", 0) == 0.002
    assert get("cachealloc_fence_waits_total", 0) == 5
    assert get("cachealloc_growths_total", 1) == 20
    assert "# TYPE cachealloc_sync_wait_seconds counter" in text
    by_pid = {(n, dict(lab).get("pid")): v for (n, lab), v in samples.items()}
    assert by_pid[("cachealloc_responding", str(a))] == 1, by_pid
    # device series carry the driver's names as dcgm-exporter's do, so that they join
    labs = [dict(lab) for (n, lab) in samples if n == "cachealloc_reserved_bytes" and
            dict(lab).get("pid") == str(a)]
    assert {(lab["device"], lab.get("UUID"), lab.get("pci_bus_id")) for lab in labs} == {
        ("0", "GPU-96be9fff-fdfd-9b87-88d4-fe5b9a012100", "00000000:3B:00.0"),
        ("1", "GPU-96be9fff-fdfd-9b87-88d4-fe5b9a012101", "00000000:3C:00.0")}, labs
    assert 0 <= by_pid[("cachealloc_heartbeat_age_seconds", str(a))] < 5
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


def test_host_pool_row(env):
    # Pinned host memory is a pool of its own: a "host" row, a "host" object, device="host"
    # samples; never part of a device's bar.
    _, a = env.writer("--devices", 1, "--mib", 64, "--host-mib", 32, "--total-mib", 1024)
    _, b = env.writer("--devices", 1, "--mib", 8)
    mem_published(env, a)
    doc = env.json()
    h = proc_of(doc, a)["host"]
    assert proc_of(doc, b)["host"] is None
    assert h["pool"] == "pinned" and h["reserved_bytes"] == 32 * MIB, h
    assert h["allocated_bytes"] == 24 * MIB and h["cached_bytes"] == 8 * MIB, h
    assert h["alloc_calls"] == 500 and h["cache_hits"] == 498 and h["driver_alloc_calls"] == 2
    assert [d["device"] for d in proc_of(doc, a)["devices"]] == [0]
    out = env.run("--once").stdout
    rows = table_rows(out, a)
    assert [r[2] for r in rows] == ["0", "host"], out
    assert " ".join(rows[1][4:6]) == "32.0 MiB", out
    assert [r[2] for r in table_rows(out, b)] == ["0"], out
    # the device's bar counts the device's pools only: 64 + 8 MiB held, 128 MiB by others
    assert "DEV0   [" in out and "200 MiB used of 1.00 GiB" in out, out
    samples = check_openmetrics.check(env.run("--prometheus").stdout)
    host = {n: v for (n, lab), v in samples.items()
            if dict(lab).get("pid") == str(a) and dict(lab).get("device") == "host"}
    assert host["cachealloc_reserved_bytes"] == 32 * MIB, host
    assert host["cachealloc_cache_hits_total"] == 498, host
    assert "cachealloc_device_total_bytes" not in host, host


def test_prometheus_escapes_command(env):
    # The command line is this writer's argv: quotes and backslashes must be escaped.
    _, a = env.writer("--api", 'cu"da\\x')
    text = env.run("--prometheus").stdout
    samples = check_openmetrics.check(text)
    commands = {dict(k[1]).get("command", "") for k in samples}
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
    assert "[dead]" in " ".join(table_rows(out, c)[0]), out
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


def test_stale_heartbeat_not_responding(env):
    """A live process whose last snapshot is 10 s old is shown as not responding everywhere,
    and keeps its numbers; a writer whose monitor thread beats is responding."""
    _, a = env.writer()
    mem_published(env, a)
    me = as_this_process(env, a, beat_ns=time.monotonic_ns() - 10 * 10**9)
    doc = env.json()
    p, w = proc_of(doc, me), proc_of(doc, a)
    assert p["alive"] is True and p["responding"] is False, p
    assert p["heartbeat_age_ms"] >= 10000 and p["devices"][0]["reserved_bytes"] == MIB, p
    assert w["responding"] is True, w
    out = env.run("--once").stdout
    assert "[not responding]" in " ".join(table_rows(out, me)[0]), out
    assert "[not responding]" not in " ".join(table_rows(out, a)[0]), out
    samples = check_openmetrics.check(env.run("--prometheus").stdout)
    by_pid = {(n, dict(lab).get("pid")): v for (n, lab), v in samples.items()}
    assert by_pid[("cachealloc_responding", str(me))] == 0, by_pid
    assert by_pid[("cachealloc_heartbeat_age_seconds", str(me))] >= 10
    assert os.path.exists(env.seg_path(me))  # not responding is not dead: never reaped


def test_version1_segment_without_device_memory(env):
    """A segment of ABI version 1 (the previous one) is shown, without the device memory its
    spare words might hold."""
    _, a = env.writer("--mib", 32)
    mem_published(env, a)
    me = as_this_process(env, a, version=1)
    doc = env.json()
    old, new = proc_of(doc, me)["devices"][0], proc_of(doc, a)["devices"][0]
    assert old["device_total_bytes"] is None and old["device_free_bytes"] is None, old
    assert new["device_total_bytes"] == 16384 * MIB, new
    assert old["reserved_bytes"] == new["reserved_bytes"] == 32 * MIB
    assert 'pid="%d"' % me not in "\n".join(
        l for l in env.run("--prometheus").stdout.splitlines() if "device_total" in l)
    # a device only version 1 processes use has a bar against the reserved bytes
    os.remove(env.seg_path(a))
    out = env.run("--once").stdout
    assert "(device memory not published)" in out.splitlines()[0], out


def test_version4_segment_without_waits(env):
    """A segment of ABI version 4 (records of 192 bytes) is shown with all it has, the waits
    as absent: null in JSON, no series, "-" in the table."""
    _, a = env.writer("--mib", 32)
    mem_published(env, a)
    me = as_this_process(env, a, version=4)
    doc = env.json()
    old, new = proc_of(doc, me)["devices"][0], proc_of(doc, a)["devices"][0]
    for key in ("sync_wait_ns", "fence_wait_ns", "fence_waits", "grow_ns", "growths"):
        assert old[key] is None and new[key] is not None, (key, old, new)
    for key in ("reserved_bytes", "cache_hits", "device_total_bytes", "uuid", "pci_bus_id"):
        assert old[key] == new[key], (key, old, new)
    text = env.run("--prometheus").stdout
    samples = check_openmetrics.check(text)
    mine = {n for (n, lab) in samples if dict(lab).get("pid") == str(me)}
    assert "cachealloc_reserved_bytes" in mine and "cachealloc_growths_total" not in mine, mine
    theirs = {n for (n, lab) in samples if dict(lab).get("pid") == str(a)}
    assert "cachealloc_sync_wait_seconds_total" in theirs, theirs
    out = env.run("--once").stdout
    assert column(out, me, "WAITMS") == ["-"] and column(out, a, "WAITMS") != ["-"], out


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
          test_stale_heartbeat_not_responding, test_version1_segment_without_device_memory,
          test_version4_segment_without_waits,
          test_empty_and_missing_dir], sys.argv)
