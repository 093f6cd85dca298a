"""The checks of docs/grafana/cachealloc.json shared by its tests.

check(doc) raises ValueError unless doc is a dashboard Grafana imports as shipped: the keys of
a dashboard, a Prometheus data source variable that every panel and target uses, the template
variables instance, uuid and pci, panels with unique ids on the grid, and a PromQL expr in
every target. targets(doc) lists (panel title, expr); expand() fills the template variables in
as Grafana does; label_query() turns a variable's label_values() into the Prometheus API call
Grafana makes for it."""
import json
import re

DASHBOARD_KEYS = ("title", "uid", "schemaVersion", "panels", "templating", "time", "version")
PANEL_KEYS = ("id", "type", "title", "gridPos")
VARIABLES = ("datasource", "instance", "uuid", "pci")
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
MIN_SCHEMA = 36  # Grafana 9.4; current releases write 39 to 41
VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
LABEL_VALUES = re.compile(r"^label_values\((?:(.+),\s*)?(\w+)\)$")


def load(path):
    with open(path) as f:
        return json.load(f)


def _check_panel(p, ids, tiles):
    for key in PANEL_KEYS:
        if key not in p:
            raise ValueError("panel %r lacks %s" % (p.get("title"), key))
    if p["id"] in ids:
        raise ValueError("panel id %r twice" % p["id"])
    ids.add(p["id"])
    g = p["gridPos"]
    if not all(isinstance(g.get(k), int) for k in "hwxy") or g["x"] + g["w"] > 24:
        raise ValueError("panel %r: bad gridPos %r" % (p["title"], g))
    for cell in ((g["x"] + dx, g["y"] + dy) for dx in range(g["w"]) for dy in range(g["h"])):
        if cell in tiles:
            raise ValueError("panels %r and %r overlap" % (tiles[cell], p["title"]))
        tiles[cell] = p["title"]
    if p["type"] == "row":
        return
    if p.get("datasource") != DATASOURCE or not p.get("targets"):
        raise ValueError("panel %r: no targets or not the ${datasource} data source" % p["title"])
    for t in p["targets"]:
        if not isinstance(t.get("expr"), str) or not t["expr"].strip():
            raise ValueError("panel %r: a target without expr" % p["title"])
        if t.get("datasource", DATASOURCE) != DATASOURCE or not t.get("refId"):
            raise ValueError("panel %r: target %r lacks refId or data source" % (p["title"], t))


def check(doc):
    """Raise ValueError with the reason unless doc is a valid dashboard as described above."""
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    for key in DASHBOARD_KEYS:
        if key not in doc:
            raise ValueError("no %s" % key)
    if not isinstance(doc["schemaVersion"], int) or doc["schemaVersion"] < MIN_SCHEMA:
        raise ValueError("schemaVersion %r is older than %d" % (doc["schemaVersion"], MIN_SCHEMA))
    names = {v.get("name"): v for v in doc["templating"].get("list", [])}
    for name in VARIABLES:
        if name not in names:
            raise ValueError("no template variable %s" % name)
    ds = names["datasource"]
    if ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        raise ValueError("the datasource variable is not a Prometheus data source")
    for name in VARIABLES[1:]:
        v = names[name]
        if v.get("datasource") != DATASOURCE or not LABEL_VALUES.match(v.get("definition", "")):
            raise ValueError("variable %s is not a label_values() query of ${datasource}" % name)
    ids, tiles = set(), {}
    for p in doc["panels"]:
        _check_panel(p, ids, tiles)
    if not targets(doc):
        raise ValueError("no panel has a target")


def targets(doc):
    """[(panel title, expr)] of every target, in panel order."""
    return [(p["title"], t["expr"]) for p in doc["panels"] if p["type"] != "row"
            for t in p["targets"]]


def promql_regex(value):
    """value as a regex matching it alone, inside a PromQL string (its backslashes doubled)."""
    return re.sub(r"([\\.^$*+?()\[\]{}|])", r"\\\\\1", value)


def expand(expr, values, rate_interval="15s"):
    """expr with $var and ${var} replaced: values[var] (a regex already), $__rate_interval by
    rate_interval. An unknown variable raises ValueError."""
    def one(m):
        name = m.group(1) or m.group(2)
        if name == "__rate_interval":
            return rate_interval
        if name not in values:
            raise ValueError("unknown variable $%s in %s" % (name, expr))
        return values[name]
    return VAR.sub(one, expr)


def label_query(doc, name, values):
    """(label, match or None) of variable name's label_values(), its variables expanded."""
    v = {x["name"]: x for x in doc["templating"]["list"]}[name]
    m = LABEL_VALUES.match(v["definition"])
    match = expand(m.group(1), values) if m.group(1) else None
    return m.group(2), match
