"""docs/grafana/cachealloc.json is a dashboard Grafana imports (grafana_dashboard.check), and
the checker rejects what would break an import. test_prometheus.py sends every panel's query
to a real Prometheus.  Usage: test_grafana.py DASHBOARD_JSON"""
import copy
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grafana_dashboard as gd  # noqa: E402

WAIT_METRICS = ("cachealloc_sync_wait_seconds_total", "cachealloc_fence_wait_seconds_total",
                "cachealloc_grow_seconds_total", "cachealloc_fence_waits_total",
                "cachealloc_growths_total")


def broken(doc, how):
    d = copy.deepcopy(doc)
    how(d)
    try:
        gd.check(d)
    except ValueError:
        return
    raise AssertionError("the checker accepted a dashboard broken so")


def main(path):
    doc = gd.load(path)
    gd.check(doc)
    exprs = [e for _, e in gd.targets(doc)]
    titles = [p["title"] for p in doc["panels"]]
    # what the dashboard promises to show
    for metric in WAIT_METRICS + ("cachealloc_cache_hits_total", "cachealloc_oom_failures_total",
                                  "cachealloc_oom_recoveries_total",
                                  "cachealloc_given_to_neighbours_bytes_total"):
        assert any(metric in e for e in exprs), metric
    for word in ("Reserved bytes per device", "Cached bytes per process", "Hit rate",
                 "Driver calls saved", "Pinned host memory per process"):
        assert word in titles, (word, titles)
    assert any('device="host"' in e for e in exprs)
    for e in exprs:
        gd.expand(e, {"instance": ".*", "uuid": ".*", "pci": ".*"})  # no unknown variable
    # the checker is not a rubber stamp
    panel = next(i for i, p in enumerate(doc["panels"]) if p["type"] != "row")
    broken(doc, lambda d: d.pop("schemaVersion"))
    broken(doc, lambda d: d["panels"][panel].update(id=d["panels"][0]["id"]))
    broken(doc, lambda d: d["panels"][panel]["targets"][0].pop("expr"))
    broken(doc, lambda d: d["panels"][panel].update(datasource={"type": "prometheus",
                                                                "uid": "abc"}))
    broken(doc, lambda d: d["templating"]["list"].pop(0))
    broken(doc, lambda d: d["panels"][panel]["gridPos"].update(x=20))
    print("dashboard ok: %d panels, %d queries" % (len(doc["panels"]), len(exprs)))


if __name__ == "__main__":
    main(sys.argv[1])
