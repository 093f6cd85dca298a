#!/usr/bin/env python3
"""cachealloc-top against a live program under the shim: --json matches what the program did,
--reclaim lowers its reserved memory, pinned host memory shows as its own pool, and once the program is killed its segment is shown dead
and removed; with CACHEALLOC_STATS=0 nothing is published.   stats_e2e.py TOP PROGRAM"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

top, prog = sys.argv[1], sys.argv[2]
MiB = 1 << 20


def top_json(env, pid):
    out = subprocess.run([top, "--json", "--pid", str(pid)], env=env, check=True,
                         capture_output=True, text=True).stdout
    procs = json.loads(out)["processes"]
    return procs[0] if procs else None


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


# CACHEALLOC_STATS=0: the same program publishes nothing.
with tempfile.TemporaryDirectory() as shm:
    env = dict(os.environ, CACHEALLOC_STATS="0", CACHEALLOC_SHM_DIR=shm)
    child = subprocess.Popen([prog], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    ready = child.stdout.readline().strip() == "ready"
    time.sleep(0.3)
    left = os.listdir(shm)
    child.stdin.close()
    child.wait()
    if not ready or left:
        fail("CACHEALLOC_STATS=0 still published: %r" % left)

with tempfile.TemporaryDirectory() as shm:
    env = dict(os.environ, CACHEALLOC_STATS="1", CACHEALLOC_SHM_DIR=shm)
    child = subprocess.Popen([prog], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    try:
        if child.stdout.readline().strip() != "ready":
            fail("program did not start")
        time.sleep(0.6)  # the monitor thread publishes every 250 ms
        p = top_json(env, child.pid)
        if p is None:
            fail("no segment for pid %d in %s" % (child.pid, os.listdir(shm)))
        d = p["devices"][0]
        print(json.dumps(p))
        if p["api"] != os.environ.get("CA_EXPECT_API", "cuda") or not p["alive"]:
            fail("api/alive wrong")
        if d["allocated_bytes"] != 128 * MiB or d["cached_bytes"] < 64 * MiB:
            fail("allocated %d cached %d" % (d["allocated_bytes"], d["cached_bytes"]))
        if d["alloc_calls"] != 3 or d["free_calls"] != 1 or d["reserved_bytes"] != 192 * MiB:
            fail("calls or reserved wrong")
        # Pinned host memory, a pool of its own: 3 MiB in a 4 MiB block, 1 MiB cached.
        h = p["host"]
        if h is None or (h["allocated_bytes"], h["cached_bytes"], h["reserved_bytes"],
                         h["alloc_calls"], h["free_calls"]) != (4 * MiB, MiB, 5 * MiB, 2, 1):
            fail("host pool %r" % h)
        # The device's memory as the real driver (runtime) answers the shim's monitor thread:
        # the simulated 8 GiB, less the cache's segments.
        for _ in range(50):
            d = top_json(env, child.pid)["devices"][0]
            if d["device_total_bytes"] is not None:
                break
            time.sleep(0.1)
        total, free = d["device_total_bytes"], d["device_free_bytes"]
        if "simdevice" in env.get("LD_LIBRARY_PATH", ""):
            ok = total == 8 << 30 and free == (8 << 30) - 192 * MiB
        else:  # a real GPU: its size, less the cache's segments and the context's own memory
            ok = total is not None and free is not None and 0 < free <= total - 192 * MiB
        if not ok:
            fail("device memory %r of %r" % (free, total))
        # The device's names, as the driver gives them (the monitor thread asks once): a UUID
        # from CUDA only (ROCm's is a string of another form), a PCI bus id from both.
        uuid, pci = d["uuid"], d["pci_bus_id"]
        cuda = os.environ.get("CA_EXPECT_API", "cuda") == "cuda"
        if "simdevice" in env.get("LD_LIBRARY_PATH", ""):
            want_uuid = "GPU-73696d64-6576-6963-652d-677075000000" if cuda else None
            ok = (uuid, pci) == (want_uuid, "00000000:17:00.0")
        else:
            ok = pci is not None and len(pci) == 16 and (uuid or "").startswith("GPU-") == cuda
        if not ok:
            fail("device names %r %r" % (uuid, pci))
        # Reclaim from outside, answered by the shim's monitor thread while the program waits.
        r = subprocess.run([top, "--reclaim", str(child.pid)], env=env, capture_output=True,
                           text=True)
        print(r.stdout.strip())
        if r.returncode != 0:
            fail("reclaim failed: " + r.stderr)
        time.sleep(0.6)
        d2 = top_json(env, child.pid)["devices"][0]
        if d2["reserved_bytes"] != 128 * MiB or d2["allocated_bytes"] != 128 * MiB:
            fail("after reclaim: reserved %d" % d2["reserved_bytes"])
        # A killed program cannot remove its segment: the reader marks it dead and cleans it.
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        p3 = top_json(env, child.pid)
        if p3 is None or p3["alive"]:
            fail("killed program not shown dead: %r" % p3)
        if any(name.endswith(".%d" % child.pid) for name in os.listdir(shm)):
            fail("stale segment not removed")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
print("stats end-to-end ok")
