#!/usr/bin/env python3
"""The project's layering, checked on its sources and objects (suite "structure").

    check_layers.py SOURCE_ROOT [OBJECT_DIR ...]

1. Includes flow one way: the doors, shim/cuda/ and shim/hip/, use shim/'s root (their common
   base) and src/, never each other; the CUDA door also uses shim/ipc/ (the interprocess
   exchange), which uses only the base and src/; shim/ uses src/; tools/top/ uses only src/'s stats ABI,
   tools/launch/ only its option parser (the launcher checks values exactly as the library
   reads them); src/ and tests/simdevice/ stand alone.
2. No header includes itself through others. The shim never reaches the arena's private
   headers, not even through another header: the inline hit it compiles reads the arena
   through src/block/heads.h only. Only the files above the ladder reach arena.c's header
   (src/arena/ladder.h), so no file arena.c calls can call it back.
3. Within each OBJECT_DIR (the object files of one library), no two files call each other,
   directly or around a circle: files depend downward.
4. src/ is folders in ONE order (ORDER, lowest first). A file of src/ includes only files of
   its own folder or of folders before it, and an object of src/'s libraries uses only
   functions and data of its own folder or of folders before it, whichever library holds
   them. There is no exception. Every file of src/ lies in a folder ORDER names, and every
   folder it names exists.
Exits 1 and names every breach.
"""
import os
import re
import subprocess
import sys

LAYERS = {  # layer -> the layers (or single files of them) it may include
    "src": {"src"},
    "shim": {"shim", "src"},
    "shim/ipc": {"shim/ipc", "shim", "src"},
    "shim/cuda": {"shim/cuda", "shim/ipc", "shim", "src"},
    "shim/hip": {"shim/hip", "shim", "src"},
    "tools/top": {"tools/top", "src/stats/abi.h"},
    "tools/launch": {"tools/launch", "src/options/options.h"},
    "tests/simdevice": {"tests/simdevice"},
}
PRIVATE = {  # layer -> files it may not reach, directly or through any chain of includes
    "shim": {"src/block/block.h", "src/reuse/reuse.h", "src/arena/internal.h"},
}
ONLY = {  # header -> the only files that may reach it, directly or through others
    # arena.c's own functions: for the files above the ladder, never for a rung of it.
    "src/arena/ladder.h": {"src/arena/arena.c", "src/arena/admin.c"},
}
# The folders of src/, lowest first: each uses only itself and those before it.
ORDER = [
    "src/base",     # assertions, the clock, the types the libraries share
    "src/options",  # CACHEALLOC_* parsing (its own library)
    "src/stats",    # the statistics segment, the neighbours, the timeline (its own library)
    "src/block",    # the structures; segments, blocks, bins, the map, the lock
    "src/reuse",    # the reuse contract: fences, events, waits
    "src/host",     # the pinned host pool
    "src/tcache",   # each thread's cache
    "src/arena",    # the ladder and the device's administration; the public interface
]
INCLUDE_DIRS = ["src", "shim"]  # what the builds add to the include path: names relative to these
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(rel):
    for layer in sorted(LAYERS, key=len, reverse=True):
        if rel == layer or rel.startswith(layer + "/"):
            return layer
    return None


def private_of(rel):
    """The files PRIVATE keeps from rel: its layer's, and those of each layer it is nested in."""
    return set().union(*(f for layer, f in PRIVATE.items() if rel.startswith(layer + "/")))


def sources(root):
    for layer in LAYERS:
        for d, _, files in os.walk(os.path.join(root, layer)):
            for f in files:
                if f.endswith((".c", ".h", ".def")):
                    yield os.path.relpath(os.path.join(d, f), root)


def resolve(root, rel, name, by_base):
    """The project file an include names: beside the includer, else the one file of that name
    (found through an include directory); None for a system or generated header; a list of
    candidates when the name is not unique, which the check reports rather than guesses."""
    here = os.path.normpath(os.path.join(os.path.dirname(rel), name))
    if os.path.exists(os.path.join(root, here)):
        return here
    for d in INCLUDE_DIRS:
        there = os.path.normpath(os.path.join(d, name))
        if os.path.exists(os.path.join(root, there)):
            return there
    hits = by_base.get(os.path.basename(name), [])
    if not hits:
        return None
    return hits[0] if len(hits) == 1 else hits


def cycles(graph):
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = n[0]
        n[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = n[0]
                    n[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def check_includes(root):
    errors, header_graph, graph = [], {}, {}
    files = sorted(set(sources(root)))  # a layer's folder holds the layers nested in it
    by_base = {}
    for rel in files:
        by_base.setdefault(os.path.basename(rel), []).append(rel)
    for rel in files:
        text = open(os.path.join(root, rel), encoding="utf-8", errors="replace").read()
        layer = layer_of(rel)
        for name in INCLUDE.findall(text):
            target = resolve(root, rel, name, by_base)
            if target is None:
                continue
            if isinstance(target, list):
                errors.append("%s includes %s: which of %s?" % (rel, name, ", ".join(target)))
                continue
            allowed = LAYERS[layer]
            if layer_of(target) not in allowed and target not in allowed:
                errors.append("%s includes %s: %s may not use %s" %
                              (rel, target, layer, layer_of(target) or "it"))
            errors += folder_breaches(rel, target)
            graph.setdefault(rel, set()).add(target)
            if rel.endswith(".h") and target.endswith(".h"):
                header_graph.setdefault(rel, set()).add(target)
    for comp in cycles(header_graph):
        errors.append("headers include each other: " + " -> ".join(comp))
    for rel in sorted(graph):
        seen = reached(graph, rel)
        for bad in sorted(private_of(rel) & seen):
            errors.append("%s reaches %s: private to its layer" % (rel, bad))
        for header, allowed in sorted(ONLY.items()):
            if header in seen and rel not in allowed:
                errors.append("%s reaches %s: only %s may" %
                              (rel, header, ", ".join(sorted(allowed))))
    for name in sorted(set(ONLY) | set(ORDER)):
        if not os.path.exists(os.path.join(root, name)):
            errors.append("no file %s, which the layering names" % name)
    for rel in sorted(files):
        if layer_of(rel) == "src" and folder_of(rel) not in ORDER:
            errors.append("%s: in no folder of src/ that the layering names" % rel)
    return errors


def folder_of(rel):
    """The folder of src/ that holds rel (its first directory below src/), else None."""
    parts = rel.split("/")
    return "/".join(parts[:2]) if parts[0] == "src" and len(parts) > 2 else None


def rank_of(folder):
    """folder's place in ORDER (lowest 0), None for a folder it does not name."""
    return ORDER.index(folder) if folder in ORDER else None


def folder_breaches(rel, target):
    """Includes that ORDER forbids: a file of src/ including a file of a folder after its own."""
    mine, theirs = rank_of(folder_of(rel)), rank_of(folder_of(target))
    if mine is None or theirs is None or theirs <= mine:
        return []
    return ["%s includes %s: %s comes after %s" %
            (rel, target, folder_of(target), folder_of(rel))]


def reached(graph, start):
    """Every file start includes, directly or through others."""
    seen, todo = set(), [start]
    while todo:
        for t in graph.get(todo.pop(), ()):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def symbols(objdir):
    """(symbol -> the file of objdir defining it, file -> the symbols it uses)."""
    defined, used = {}, {}
    for f in sorted(os.listdir(objdir)):
        if not f.endswith(".o"):
            continue
        unit = f.split(".")[0]
        out = subprocess.run(["nm", os.path.join(objdir, f)], capture_output=True,
                             text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDBRVW":
                defined[parts[2]] = unit
            elif len(parts) == 2 and parts[0] in ("U", "w"):
                used.setdefault(unit, set()).add(parts[1])
    return defined, used


def object_calls(objdir):
    """file -> the files of the same library whose functions or data it uses."""
    defined, used = symbols(objdir)
    return {u: {defined[s] for s in syms if s in defined and defined[s] != u}
            for u, syms in used.items()}


def folder_of_unit(unit):
    """The folder of src/ an object of src/'s libraries was built from (meson names an object
    by its source's path under src/, / as _), else None."""
    for folder in ORDER:
        if unit.startswith(folder[len("src/"):] + "_"):
            return folder
    return None


def order_breaches(objdirs):
    """Uses that ORDER forbids: an object of src/ using what an object of a later folder
    defines, in its own library or another of src/'s (the OBJECT_DIRs under a folder src)."""
    defined, used = {}, {}
    for d in objdirs:
        if os.path.isdir(d) and os.path.basename(os.path.dirname(os.path.abspath(d))) == "src":
            dd, uu = symbols(d)
            defined.update(dd)
            for unit, syms in uu.items():
                used.setdefault(unit, set()).update(syms)
    errors = []
    for unit, syms in sorted(used.items()):
        mine = rank_of(folder_of_unit(unit))
        if mine is None:
            continue
        for sym in sorted(syms):
            theirs = rank_of(folder_of_unit(defined.get(sym, "")))
            if theirs is not None and theirs > mine:
                errors.append("%s uses %s of %s: %s comes after %s" %
                              (unit, sym, defined[sym], ORDER[theirs], ORDER[mine]))
    return errors


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    errors = check_includes(sys.argv[1])
    for objdir in sys.argv[2:]:
        if not os.path.isdir(objdir):
            errors.append("no object directory %s" % objdir)
            continue
        for comp in cycles(object_calls(objdir)):
            errors.append("%s: files call each other: %s" %
                          (os.path.basename(objdir), " -> ".join(comp)))
    errors += order_breaches(sys.argv[2:])
    for e in errors:
        print(e)
    print("layers: %s" % ("%d breaches" % len(errors) if errors else "ok"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
