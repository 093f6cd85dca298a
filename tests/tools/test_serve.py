"""cachealloc-top --serve against fake writer processes: both exposition formats, the page at
/, and requests a scraper never sends (wrong methods, unknown paths, '..', oversized headers, a
thousand idle connections), each answered with a 4xx or outlived, never a crash; processes that
exit leave the output, and their segments are left alone; SIGTERM and SIGINT stop it cleanly.
Usage: test_serve.py CACHEALLOC_TOP FAKE_WRITER"""
import http.client
import os
import resource
import signal
import socket
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_openmetrics  # noqa: E402
from toptest import SkipTest, main, wait_until  # noqa: E402

OM_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
             "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, env, listen=None):
        self.port = free_port()
        self.p = subprocess.Popen([env.top, "--serve", listen or "127.0.0.1:%d" % self.port],
                                  env=env.env, stderr=subprocess.PIPE, text=True)
        env.procs.append(self.p)
        line = self.p.stderr.readline()
        if "serving http://" not in line:
            raise AssertionError("server did not start: %r" % line)

    def get(self, path="/metrics", method="GET", headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            c.request(method, path, headers=headers or {})
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read().decode()
        finally:
            c.close()

    def raw(self, data, timeout=10):
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
            s.sendall(data)
            out = b""
            while True:
                try:
                    chunk = s.recv(65536)
                except ConnectionResetError:
                    break
                if not chunk:
                    break
                out += chunk
            return out.decode(errors="replace")

    def served(self, timeout=15):
        """Whether a scrape gets 200 within timeout: connections the server has not yet seen
        closed still count against a client's limit, and are refused meanwhile."""
        def ok():
            try:
                return self.get()[0] == 200
            except OSError:
                return False
        return wait_until(ok, timeout=timeout, step=0.2)

    def stop(self, sig=signal.SIGTERM):
        self.p.send_signal(sig)
        return self.p.wait(timeout=10)


def text_samples(body):
    """The text format 0.0.4: sample lines into {(name, labels): value}; TYPE lines name the
    samples exactly (counters with their _total)."""
    types, samples = {}, {}
    for line in body.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            types[name] = kind
        elif line and not line.startswith("#"):
            name = line.split("{")[0].split(" ")[0]
            assert name in types, "sample %s without its TYPE line" % name
            labels = check_openmetrics.parse_labels(line[len(name):line.rindex("}") + 1]) \
                if "{" in line else {}
            samples[(name, frozenset(labels.items()))] = float(line.rsplit(" ", 1)[1])
    return types, samples


def test_both_formats(env):
    _, a = env.writer("--devices", 2, "--mib", 16, "--host-mib", 4)
    s = Server(env)
    # devices appear once the writer's monitor thread has named them (its first round)
    assert wait_until(lambda: 'device="1"' in s.get()[2], timeout=5), "devices never named"
    status, hdr, body = s.get()
    assert status == 200, status
    assert hdr["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8", hdr
    assert "# EOF" not in body
    types, samples = text_samples(body)
    assert types["cachealloc_alloc_calls_total"] == "counter", types
    assert types["cachealloc_reserved_bytes"] == "gauge"
    by = {(n, dict(lab).get("device")): v for (n, lab), v in samples.items()
          if dict(lab).get("pid") == str(a)}
    assert by[("cachealloc_reserved_bytes", "1")] == 32 << 20, by
    assert by[("cachealloc_reserved_bytes", "host")] == 4 << 20, by
    assert by[("cachealloc_alloc_calls_total", "0")] == 1000, by
    assert by[("cachealloc_largest_free_block_bytes", "1")] == 8 << 20, by
    labels = [dict(lab) for (n, lab) in samples if n == "cachealloc_reserved_bytes"]
    base = {"pid", "user", "command", "device"}
    assert all(set(lab) in (base, base | {"UUID", "pci_bus_id"}) for lab in labels), labels
    assert all("UUID" not in lab for lab in labels if lab["device"] == "host"), labels
    assert samples[("cachealloc_exporter_processes", frozenset())] == 1
    # OpenMetrics when the scraper asks for it, as Prometheus does
    status, hdr, body = s.get(headers={"Accept": OM_ACCEPT})
    assert status == 200 and hdr["Content-Type"].startswith("application/openmetrics-text; "
                                                           "version=1.0.0"), hdr
    om = check_openmetrics.check(body)
    assert any(n == "cachealloc_alloc_calls_total" and dict(lab).get("pid") == str(a) and
               dict(lab)["device"] == "0" and v == 1000 for (n, lab), v in om.items()), om
    # a scraper that prefers the text format, or wants a version this does not serve, gets it
    for accept in ("text/plain;version=0.0.4,application/openmetrics-text;q=0.5",
                   "application/openmetrics-text;version=2.0.0",
                   "application/openmetrics-text;q=0", "application/json"):
        status, hdr, _ = s.get(headers={"Accept": accept})
        assert hdr["Content-Type"].startswith("text/plain"), (accept, hdr)
    # HEAD: the headers alone
    status, hdr, body = s.get(method="HEAD")
    assert status == 200 and body == "", (status, body)
    status, hdr, body = s.get("/")
    assert status == 200 and 'href="/metrics"' in body and hdr["Content-Type"].startswith(
        "text/html"), (status, hdr)
    assert s.stop() == 0


def test_processes_come_and_go(env):
    s = Server(env)
    _, body = s.get()[0], s.get()[2]
    assert "cachealloc_exporter_processes 0" in body, body
    p, a = env.writer()
    assert 'pid="%d"' % a in s.get()[2]
    os.kill(a, signal.SIGSTOP)  # alive and silent: shown, not responding, never waited for
    try:
        def silent():
            _, samples = text_samples(s.get()[2])
            return any(n == "cachealloc_responding" and dict(lab)["pid"] == str(a) and v == 0
                       for (n, lab), v in samples.items())
        t0 = time.monotonic()
        assert wait_until(silent, timeout=15, step=0.5), "not shown as not responding"
        t1 = time.monotonic()
        s.get()
        assert time.monotonic() - t1 < 2, "a scrape waited on a stopped process"
        assert t1 - t0 < 15
    finally:
        os.kill(a, signal.SIGCONT)
    p.terminate()
    p.wait()
    body = s.get()[2]
    assert 'pid="%d"' % a not in body and "cachealloc_exporter_processes 0" in body, body
    # a writer killed outright is dead: left out; the exporter writes nothing, so its segment
    # stays for cachealloc-top to clean
    p, b = env.writer()
    p.kill()
    p.wait()
    assert 'pid="%d"' % b not in s.get()[2]
    assert os.path.exists(env.seg_path(b))
    assert s.stop(signal.SIGINT) == 0


def test_hostile_requests(env):
    env.writer()
    s = Server(env)
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        status, hdr, _ = s.get(method=method)
        assert status == 405 and hdr.get("Allow") == "GET, HEAD", (method, status, hdr)
    for path in ("/../etc/passwd", "/metrics/../..", "/..", "/metrics/", "/nope", "/%2e%2e/"):
        out = s.raw(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert out.startswith("HTTP/1.1 404"), (path, out[:80])
    out = s.raw(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n")
    assert out.startswith("HTTP/1.1 431") or out == "", out[:80]
    out = s.raw(b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert out[:12] in ("HTTP/1.1 414", "HTTP/1.1 431") or out == "", out[:80]
    out = s.raw(b"GET /metrics HTTP/9.9\r\nHost: x\r\n\r\n")
    assert out[:10] == "HTTP/1.1 5" or out[:10] == "HTTP/1.1 4", out[:80]
    # Not HTTP at all: answered 400, or closed at the idle timeout (10 s)
    out = s.raw(b"\x00\xff garbage\r\n\r\n", timeout=15)
    assert out.startswith("HTTP/1.1 400") or out == "", out[:80]
    out = s.raw(b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
    assert out.startswith("HTTP/1.1 405"), out[:80]
    out = s.raw(b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close"
                b"\r\n\r\nhello")
    assert out.startswith("HTTP/1.1 200"), out[:80]
    # A thousand idle connections: past the limits (8 a client address, 256 in all) they are
    # dropped at once; the server lives, closes the others at its idle timeout, and serves
    # again once they are gone.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1100:
        raise SkipTest("this process may open only %d files" % hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1100), hard))
    idle = []
    t0 = time.monotonic()
    try:
        for _ in range(1000):
            if time.monotonic() - t0 > 20:  # the loop is bounded in time too
                break
            c = socket.socket()
            c.settimeout(0.5)
            try:
                c.connect(("127.0.0.1", s.port))
            except OSError:
                c.close()
                continue
            idle.append(c)
        assert s.p.poll() is None, "the server died"
    finally:
        for c in idle:
            c.close()
    assert s.served(), "not serving after the idle connections closed"
    assert s.p.poll() is None
    assert s.stop() == 0


def test_bad_listen(env):
    for arg in ("", "0", "70000", "x", "1.2.3.4:", ":9449", "::1:9449", "[::1]9449",
                "no.such.host.invalid:9449"):
        r = env.run("--serve", arg, check=False)
        assert r.returncode == 2, (arg, r.returncode, r.stderr)
        assert r.stderr.count("\n") == 1 and "--serve" in r.stderr, (arg, r.stderr)
    assert env.run("--serve", "9449", "--pid", "1", check=False).returncode == 2
    # a port already taken: one line, exit 1
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        r = env.run("--serve", "127.0.0.1:%d" % taken.getsockname()[1], check=False)
        assert r.returncode == 1 and "cannot listen" in r.stderr, (r.returncode, r.stderr)
    # IPv6, where the machine has it
    if socket.has_ipv6:
        try:
            with socket.socket(socket.AF_INET6) as t:
                t.bind(("::1", 0))
        except OSError:
            return
        port = free_port()
        p = subprocess.Popen([env.top, "--serve", "[::1]:%d" % port], env=env.env,
                             stderr=subprocess.PIPE, text=True)
        env.procs.append(p)
        assert "serving http://[::1]:%d/metrics" % port in p.stderr.readline()
        c = http.client.HTTPConnection("::1", port, timeout=10)
        c.request("GET", "/metrics")
        assert c.getresponse().status == 200
        c.close()
        p.terminate()
        assert p.wait(timeout=10) == 0


if __name__ == "__main__":
    main([test_both_formats, test_processes_come_and_go, test_hostile_requests, test_bad_listen],
         sys.argv)
