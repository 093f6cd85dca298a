#!/bin/sh
# Checks the monitoring examples in docs/prometheus/:
#   test_prom_rules.sh DOCS_PROMETHEUS_DIR
# - the rule file defines the required alerts, and its unit tests exercise each of them;
# - promtool check rules, promtool test rules, promtool check config (run in a temporary copy
#   of the directory, so nothing is ever written next to the sources);
# - daemonset.yaml parses as YAML and has the fields the exporter depends on (skipped when
#   python3 or its yaml module is missing).
# Exits 77 (meson's "skipped") when promtool is not installed, 1 on any failure.
set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 DOCS_PROMETHEUS_DIR" >&2
    exit 2
fi
src=$1

if ! command -v promtool >/dev/null 2>&1; then
    echo "SKIP: promtool is not installed (Debian/Ubuntu: apt-get install prometheus)"
    exit 77
fi

failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
ok() {
    echo "ok: $*"
}

for f in cachealloc-rules.yml cachealloc-rules-test.yml prometheus.yml daemonset.yaml; do
    if [ ! -f "$src/$f" ]; then
        echo "FAIL: $src/$f is missing"
        exit 1
    fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/prom-rules.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT PIPE TERM
cp "$src/cachealloc-rules.yml" "$src/cachealloc-rules-test.yml" "$src/prometheus.yml" \
    "$src/daemonset.yaml" "$tmp/" || exit 1
cd "$tmp" || exit 1

# The group, and every alert the documentation promises, each defined once and each
# named by at least one unit test.
if grep -Eq '^[[:space:]]*-[[:space:]]*name:[[:space:]]*"?cachealloc"?[[:space:]]*$' \
        cachealloc-rules.yml; then
    ok "rule group cachealloc"
else
    fail "cachealloc-rules.yml has no rule group named cachealloc"
fi
for alert in CacheallocIdleDeviceMemory CacheallocRepeatedOOMRecoveries \
             CacheallocOOMFailures CacheallocProcessNotResponding; do
    n=$(grep -Ec "^[[:space:]]*-[[:space:]]*alert:[[:space:]]*\"?$alert\"?[[:space:]]*\$" \
        cachealloc-rules.yml)
    if [ "$n" -ne 1 ]; then
        fail "cachealloc-rules.yml defines alert $alert $n times (expected once)"
    elif ! grep -Eq "^[[:space:]]*alertname:[[:space:]]*\"?$alert\"?[[:space:]]*\$" \
            cachealloc-rules-test.yml; then
        fail "cachealloc-rules-test.yml never tests alert $alert"
    else
        ok "alert $alert defined and tested"
    fi
done

# promtool prints its own diagnostics; each is shown only on failure.
run() {
    what=$1
    shift
    if out=$("$@" 2>&1); then
        ok "$what"
    else
        fail "$what"
        printf '%s\n' "$out" | sed 's/^/    /'
    fi
}
run "promtool check rules cachealloc-rules.yml" promtool check rules cachealloc-rules.yml
run "promtool test rules cachealloc-rules-test.yml" promtool test rules cachealloc-rules-test.yml
run "promtool check config prometheus.yml" promtool check config prometheus.yml

# The DaemonSet: valid YAML, and the settings without which the exporter sees nothing.
if ! command -v python3 >/dev/null 2>&1; then
    echo "skip: daemonset.yaml not parsed (no python3)"
elif ! python3 -c 'import yaml' >/dev/null 2>&1; then
    echo "skip: daemonset.yaml not parsed (python3 has no yaml module)"
else
    run "daemonset.yaml parses and runs the exporter with hostIPC and hostPID" python3 -c '
import sys, yaml
docs = [d for d in yaml.safe_load_all(open("daemonset.yaml")) if d is not None]
ds = [d for d in docs if d.get("kind") == "DaemonSet"]
if len(ds) != 1:
    sys.exit("expected one DaemonSet, found %d" % len(ds))
ds = ds[0]
meta = ds["metadata"]
if (meta.get("name"), meta.get("namespace")) != ("cachealloc-exporter", "monitoring"):
    sys.exit("DaemonSet is %s/%s, expected monitoring/cachealloc-exporter"
             % (meta.get("namespace"), meta.get("name")))
spec = ds["spec"]["template"]["spec"]
for key in ("hostIPC", "hostPID"):
    if spec.get(key) is not True:
        sys.exit("%s is not true" % key)
argv = spec["containers"][0]["command"] + spec["containers"][0].get("args", [])
if "--serve" not in argv or not any(a.endswith(":9449") for a in argv):
    sys.exit("the container does not run cachealloc-top --serve ...:9449: %r" % argv)
'
fi

if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "all checks passed"
exit 0
