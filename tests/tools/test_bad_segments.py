"""Crafted bad segments are skipped with a note on stderr, never crash the reader, and never
reach --json stdout.  Usage: test_bad_segments.py CACHEALLOC_TOP FAKE_WRITER"""
import json
import os
import struct
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_openmetrics  # noqa: E402
from toptest import HEADER_SIZE, RECORD_SIZE, SkipTest, main, older_layout, proc_of  # noqa: E402

# Offsets fixed by the static assertions of src/stats/abi.h.
OFF_MAGIC, OFF_VERSION, OFF_HSIZE, OFF_RSIZE, OFF_CAP, OFF_USED, OFF_UID, OFF_PID = \
    0, 8, 12, 16, 20, 24, 28, 32
OFF_HOST_RECORDS, OFF_IDENT_RECORDS = 96, 100
FAKE_PID = 999000  # above any pid_max default, so never alive


def template(env):
    _, a = env.writer("--devices", 2)
    with open(env.seg_path(a), "rb") as f:
        return a, bytearray(f.read())


def put(data, off, fmt, value):
    d = bytearray(data)
    struct.pack_into(fmt, d, off, value)
    return d


def write_seg(env, pid, data, uid=None):
    path = env.seg_path(pid, uid)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, 0o600)
    return path


def run_all_modes(env):
    r = env.run("--json")
    doc = json.loads(r.stdout)
    for mode in ("--once", "--prometheus"):
        rr = env.run(mode)
        if mode == "--prometheus":
            check_openmetrics.check(rr.stdout)
    return doc, r.stderr


def test_bad_headers_skipped(env):
    a, good = template(env)
    with_pid = lambda pid: put(good, OFF_PID, "<Q", pid)  # noqa: E731
    cases = {
        1: bytearray(),                                            # empty
        2: with_pid(FAKE_PID + 2)[:100],                          # truncated header
        3: with_pid(FAKE_PID + 3)[:2000],                         # truncated records
        4: put(with_pid(FAKE_PID + 4), OFF_MAGIC, "<Q", 0x1122334455667788),
        5: put(with_pid(FAKE_PID + 5), OFF_VERSION, "<I", 6),      # a newer ABI than ours
        6: put(with_pid(FAKE_PID + 6), OFF_HSIZE, "<I", 64),
        7: put(with_pid(FAKE_PID + 7), OFF_RSIZE, "<I", 1 << 30),
        8: put(with_pid(FAKE_PID + 8), OFF_CAP, "<I", 0xFFFFFFFF),
        9: put(with_pid(FAKE_PID + 9), OFF_USED, "<I", 0xFFFFFFFF),
        10: with_pid(12345),                                       # header pid differs from name
        11: put(with_pid(FAKE_PID + 11), OFF_UID, "<I", 4242),     # header uid differs from name
        12: with_pid(FAKE_PID + 12) + bytearray(2 << 20),          # larger than any segment
        13: put(with_pid(FAKE_PID + 13), OFF_VERSION, "<I", 0),
        14: put(with_pid(FAKE_PID + 14), OFF_HOST_RECORDS, "<I", 0xFFFFFFFF),
        15: with_pid(FAKE_PID + 15)[:HEADER_SIZE + 64 * RECORD_SIZE],  # host record cut off
        16: put(with_pid(FAKE_PID + 16), OFF_IDENT_RECORDS, "<I", 960),
        17: with_pid(FAKE_PID + 17)[:HEADER_SIZE + 65 * RECORD_SIZE],  # ident records cut off
        # each version's record size belongs to it: version 4 with version 5's records, and
        # version 5 with version 4's
        18: put(with_pid(FAKE_PID + 18), OFF_VERSION, "<I", 4),
        19: put(older_layout(with_pid(FAKE_PID + 19), 4), OFF_VERSION, "<I", 5),
    }
    for n, data in cases.items():
        write_seg(env, FAKE_PID + n, data)
    doc, notes = run_all_modes(env)
    pids = [p["pid"] for p in doc["processes"]]
    assert pids == [a], pids
    for n in cases:
        assert "cachealloc.%d.%d" % (os.geteuid(), FAKE_PID + n) in notes, (n, notes)
    assert "bad magic" in notes and "unsupported ABI version" in notes
    assert notes.count("unexpected record size") == 3, notes  # cases 7, 18 and 19
    assert "too many host records" in notes and "too many ident records" in notes, notes
    # skipped, not removed: only a validated segment of a dead process is reaped
    assert os.path.exists(env.seg_path(FAKE_PID + 4))


def test_strings_sanitized(env):
    a, good = template(env)
    data = bytearray(good)
    cmd = b'evil "\x1b[2J\n\\ \xff\xfe' + b"A" * 700
    data[384:384 + 640] = cmd[:640]  # no NUL anywhere in the field
    data[128:144] = b"c" * 16
    data = put(data, OFF_PID, "<Q", FAKE_PID + 50)
    write_seg(env, FAKE_PID + 50, data)
    doc, notes = run_all_modes(env)
    p = proc_of(doc, FAKE_PID + 50)
    assert p is not None, (doc, notes)
    assert len(p["command"]) == 639 and "\x1b" not in p["command"] and "\n" not in p["command"]
    assert p["command"].startswith('evil "?[2J?\\ ??'), p["command"][:20]
    assert p["api"] == "c" * 15
    assert p["alive"] is False


def test_symlink_and_special_files(env):
    a, good = template(env)
    os.symlink(env.seg_path(a), env.seg_path(FAKE_PID + 20))
    os.mkdir(env.seg_path(FAKE_PID + 21))
    os.mkfifo(env.seg_path(FAKE_PID + 22), 0o600)
    os.symlink("/nonexistent", env.seg_path(FAKE_PID + 23))
    for name in ("cachealloc.x.1", "cachealloc.0.0", "cachealloc.%d.-5" % os.geteuid(),
                 "cachealloc.%d.07" % os.geteuid(), "cachealloc.1.2.3"):
        with open(os.path.join(env.dir, name), "wb") as f:
            f.write(good)
    doc, notes = run_all_modes(env)
    assert [p["pid"] for p in doc["processes"]] == [a], doc
    assert "symbolic link" in notes and "not a regular file" in notes, notes
    # the symlink was not followed into a reclaim either
    r = env.run("--reclaim", FAKE_PID + 20, check=False)
    assert r.returncode != 0
    assert os.path.islink(env.seg_path(FAKE_PID + 20))


def test_other_owner(env):
    if os.geteuid() != 0:
        raise SkipTest("needs root to chown a segment to another uid")
    a, good = template(env)
    # named for our uid, owned by another: refused
    path = write_seg(env, FAKE_PID + 30, put(good, OFF_PID, "<Q", FAKE_PID + 30))
    os.chown(path, 4242, 4242)
    # a live process's segment handed to another uid: refused for reading and for reclaim
    os.chown(env.seg_path(a), 4343, 4343)
    doc, notes = run_all_modes(env)
    assert doc["processes"] == [], doc
    assert "owner uid 4242 differs" in notes and "owner uid 4343 differs" in notes, notes
    r = env.run("--reclaim", a, check=False)
    assert r.returncode != 0, r
    os.chown(env.seg_path(a), os.geteuid(), os.getegid())


def test_records_that_never_settle(env):
    # A live process's segment whose every record stays odd (a writer stopped inside them, or
    # a file made so): it is shown, and a scan waits for it about a second, not a record's
    # worth of retries each (129 of them).
    a, good = template(env)
    data = bytearray(good)
    with open("/proc/self/stat") as f:
        start = int(f.read().rsplit(")", 1)[1].split()[19])
    me = os.getpid()
    struct.pack_into("<QQ", data, OFF_PID, me, start)
    struct.pack_into("<I", data, OFF_USED, 64)
    for i in range((len(data) - HEADER_SIZE) // RECORD_SIZE):
        struct.pack_into("<Q", data, HEADER_SIZE + i * RECORD_SIZE, 1)
    write_seg(env, me, data)
    t0 = time.monotonic()
    doc, _ = run_all_modes(env)
    took = time.monotonic() - t0
    p = proc_of(doc, me)
    assert p is not None and p["alive"] is True and p["devices"] == [], p
    assert took < 8, "three scans took %.1f s" % took


if __name__ == "__main__":
    main([test_bad_headers_skipped, test_records_that_never_settle, test_strings_sanitized,
          test_symlink_and_special_files, test_other_owner], sys.argv)
