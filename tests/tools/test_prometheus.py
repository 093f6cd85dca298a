"""A real Prometheus scrapes cachealloc-top --serve while two programs run under the cache: their
reserved and cached bytes arrive through Prometheus's HTTP API, and their series are gone once
the programs have exited. Skipped (77) when Debian's prometheus is not installed.
Usage: test_prometheus.py CACHEALLOC_TOP PROGRAM, PROGRAM being tests/integration/stats_hold.c
(three 64 MiB allocations, one freed, then waits for its standard input to close), with the
environment of the integration tests (the shim preloaded, the simulated device)."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

MiB = 1 << 20
top, prog = sys.argv[1], sys.argv[2]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def wait_for(what, pred, timeout=60, step=0.5):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = pred()
        if got:
            return got
        time.sleep(step)
    fail("timed out waiting for " + what)


prometheus = shutil.which("prometheus")
if not prometheus:
    print("skip: Debian's prometheus is not installed (scripts/setup.sh installs it)")
    sys.exit(77)

work = tempfile.mkdtemp(prefix="ca-prom-test.")
shm = os.path.join(work, "shm")
os.mkdir(shm)
procs = []
try:
    # The exporter and Prometheus run without the cache; the programs under it.
    plain = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    plain["CACHEALLOC_SHM_DIR"] = shm
    cached = dict(os.environ, CACHEALLOC_STATS="1", CACHEALLOC_SHM_DIR=shm)
    exporter_port, prom_port = free_port(), free_port()
    exporter = subprocess.Popen([top, "--serve", "127.0.0.1:%d" % exporter_port], env=plain,
                                stderr=subprocess.PIPE, text=True)
    procs.append(exporter)
    if "serving" not in exporter.stderr.readline():
        fail("the exporter did not start")
    with open(os.path.join(work, "prometheus.yml"), "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                "scrape_configs:\n  - job_name: cachealloc\n    static_configs:\n"
                "      - targets: ['127.0.0.1:%d']\n" % exporter_port)
    log = open(os.path.join(work, "prometheus.log"), "w")
    server = subprocess.Popen(
        [prometheus, "--config.file=" + os.path.join(work, "prometheus.yml"),
         "--storage.tsdb.path=" + os.path.join(work, "data"),
         "--web.listen-address=127.0.0.1:%d" % prom_port, "--log.level=warn"],
        env=plain, stdout=log, stderr=log, cwd=work)
    procs.append(server)
    base = "http://127.0.0.1:%d" % prom_port

    def query(q):
        url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                doc = json.load(r)
        except OSError:
            return None
        if doc.get("status") != "success":
            fail("query %s: %r" % (q, doc))
        return {(s["metric"].get("pid"), s["metric"].get("device")): float(s["value"][1])
                for s in doc["data"]["result"]}

    def ready():
        try:
            with urllib.request.urlopen(base + "/-/ready", timeout=2) as r:
                return r.status == 200
        except OSError:
            return server.poll() is not None and fail("prometheus exited; its log:\n" +
                                                      open(log.name).read())
    wait_for("prometheus to start", ready)

    programs = []
    for _ in range(2):
        p = subprocess.Popen([prog], env=cached, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
        procs.append(p)
        if p.stdout.readline().strip() != "ready":
            fail("a program under the cache did not start")
        programs.append(p)
    pids = [str(p.pid) for p in programs]

    def both(metric, want):
        got = query('%s{job="cachealloc",device="0"}' % metric) or {}
        vals = [got.get((pid, "0")) for pid in pids]
        return vals if all(v is not None and want(v) for v in vals) else None
    # stats_hold: 192 MiB reserved, 128 MiB allocated, 64 MiB cached (one block freed).
    print("reserved:", wait_for("reserved bytes", lambda: both(
        "cachealloc_reserved_bytes", lambda v: v == 192 * MiB)))
    print("cached:", wait_for("cached bytes", lambda: both(
        "cachealloc_cached_bytes", lambda v: v >= 64 * MiB)))
    up = query('up{job="cachealloc"}')
    if list(up.values()) != [1.0]:
        fail("the exporter is not up: %r" % up)
    # The programs exit: their series go stale at the next scrape.
    for p in programs:
        p.stdin.close()
        if p.wait(timeout=30) != 0:
            fail("a program failed")
    def gone():
        got = query('cachealloc_reserved_bytes{job="cachealloc"}')
        return got is not None and not any(k[0] in pids for k in got)
    wait_for("the programs' series to go", gone)
    print("series gone after exit")
    exporter.send_signal(signal.SIGTERM)
    if exporter.wait(timeout=10) != 0:
        fail("the exporter did not stop cleanly")
    print("prometheus end-to-end ok")
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    shutil.rmtree(work, ignore_errors=True)
