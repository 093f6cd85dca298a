#!/usr/bin/env python3
"""check_layers.py fails on a breach of its one order (suite "structure").

    check_layers_breach.py CHECK_LAYERS CC [CC ARGS ...]

Builds small source trees with every folder of the order: one whose includes and calls all go
down passes; one where a lower folder includes a file of a higher one fails, naming it; one
where an object of a lower folder calls a function of a higher one fails, naming it.
Exits 1 when the check misses a breach or refuses the clean tree.
"""
import importlib.util
import os
import subprocess
import sys
import tempfile

CHECK = None  # the check's module, for its tables


def load(path):
    spec = importlib.util.spec_from_file_location("check_layers", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tree(root, order, includes):
    """A file per folder of order, and the files the check names; includes: {file: included
    name}."""
    for name in CHECK.ONLY:
        os.makedirs(os.path.join(root, os.path.dirname(name)), exist_ok=True)
        open(os.path.join(root, name), "w").close()
    for folder in order:
        os.makedirs(os.path.join(root, folder), exist_ok=True)
        name = os.path.join(root, folder, "f.h")
        with open(name, "w") as f:
            f.write("/* %s */\n" % folder)
    for rel, target in includes.items():
        with open(os.path.join(root, rel), "a") as f:
            f.write('#include "%s"\n' % target)


def objects(cc, objdir, calls):
    """calls: {unit: function it calls or None}; unit U defines U_fn. cc: the compiler's
    command."""
    os.makedirs(objdir)
    for unit, callee in calls.items():
        src = os.path.join(objdir, unit + ".c")
        with open(src, "w") as f:
            if callee:
                f.write("void %s(void);\n" % callee)
            f.write("void %s_fn(void) { %s }\n" % (unit, "%s();" % callee if callee else ""))
        subprocess.run(cc + ["-c", src, "-o", os.path.join(objdir, unit + ".c.o")], check=True)


def run(script, root, *objdirs):
    out = subprocess.run([sys.executable, script, root] + list(objdirs),
                         capture_output=True, text=True)
    return out.returncode, out.stdout


def main():
    script, cc = sys.argv[1], sys.argv[2:]
    global CHECK
    CHECK = load(script)
    order = CHECK.ORDER
    low, high = order[0], order[-1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        clean = os.path.join(tmp, "clean")
        tree(clean, order, {high + "/f.h": low[len("src/"):] + "/f.h"})
        objects(cc, os.path.join(clean, "build", "src", "libcaarena.a.p"),
                {low[4:] + "_x": None, high[4:] + "_y": low[4:] + "_x_fn"})
        rc, out = run(script, clean, os.path.join(clean, "build", "src", "libcaarena.a.p"))
        if rc != 0:
            failures.append("a clean tree failed:\n" + out)
        up = os.path.join(tmp, "include_up")
        tree(up, order, {low + "/f.h": high[len("src/"):] + "/f.h"})
        rc, out = run(script, up)
        if rc != 1 or "%s/f.h includes %s/f.h" % (low, high) not in out:
            failures.append("an include up went unseen (rc %d):\n%s" % (rc, out))
        call = os.path.join(tmp, "call_up")
        tree(call, order, {})
        objdir = os.path.join(call, "build", "src", "libcaarena.a.p")
        objects(cc, objdir, {low[4:] + "_x": high[4:] + "_y_fn", high[4:] + "_y": None})
        rc, out = run(script, call, objdir)
        if rc != 1 or "uses %s_y_fn" % high[4:] not in out:
            failures.append("a call up went unseen (rc %d):\n%s" % (rc, out))
    for f in failures:
        print(f)
    print("layers breach: %s" % ("missed" if failures else "caught"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
