"""A real Prometheus scrapes cachealloc-top --serve while two programs run under the cache: their
reserved and cached bytes arrive through Prometheus's HTTP API, and their series are gone once
the programs have exited. With DASHBOARD (docs/grafana/cachealloc.json), meanwhile, every
panel's query returns data, its template variables filled in as Grafana does: all values
(".*"), then the first value each variable's own query lists. Skipped (77) when Debian's
prometheus is not installed.
Usage: test_prometheus.py CACHEALLOC_TOP PROGRAM [DASHBOARD], PROGRAM being
tests/integration/stats_hold.c (three 64 MiB allocations, one freed, then waits for its
standard input to close), with the environment of the integration tests (the shim preloaded,
the simulated device)."""
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

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grafana_dashboard as gd  # noqa: E402

MiB = 1 << 20
top, prog = sys.argv[1], sys.argv[2]
dashboard = gd.load(sys.argv[3]) if len(sys.argv) > 3 else None


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


def check_dashboard(api, pids):
    """Every target of the dashboard returns data, with every variable at All, then at the
    first value its query lists; the per-process panel shows both programs' 192 MiB."""
    every = {"instance": ".*", "uuid": ".*", "pci": ".*"}
    first = {}
    for name in ("instance", "uuid", "pci"):
        label, match = gd.label_query(dashboard, name, every)
        params = {"match[]": match} if match else {}
        listed = wait_for("variable %s to list values" % name,
                          lambda: api("/api/v1/label/%s/values" % label, params))
        first[name] = gd.promql_regex(listed[0])
        print("variable %s: %s" % (name, listed))
    for values in (every, first):
        for title, expr in gd.targets(dashboard):
            q = gd.expand(expr, values)
            got = wait_for("panel %r to return data: %s" % (title, q),
                           lambda: (api("/api/v1/query", {"query": q}) or {}).get("result"))
            if values is every:  # what the panel shows, for the log
                print("  %s: %s" % (title, sorted({s["value"][1] for s in got})))
            if title == "Reserved bytes per process" and values is every:
                held = {s["metric"]["pid"]: float(s["value"][1]) for s in got}
                if any(held.get(pid) != 192 * MiB for pid in pids):
                    fail("the per-process panel shows %r" % held)
    print("dashboard: %d queries returned data at All and at %r" % (
        len(gd.targets(dashboard)), first))


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

    def api(path, params):
        url = base + path + "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                doc = json.load(r)
        except OSError:
            return None
        if doc.get("status") != "success":
            fail("%s %r: %r" % (path, params, doc))
        return doc["data"]

    def query(q):
        data = api("/api/v1/query", {"query": q})
        return None if data is None else {
            (s["metric"].get("pid"), s["metric"].get("device")): float(s["value"][1])
            for s in data["result"]}

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
    if dashboard:
        check_dashboard(api, pids)
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
