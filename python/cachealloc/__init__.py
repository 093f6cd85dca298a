"""cachealloc, the caching allocator of GPU memory, as installed by its wheel (docs/install.md).

library_path() is the libcachealloc.so to preload (LD_PRELOAD in a job file); stats(pid) is
what `cachealloc-top --json` shows for a process; `python3 -m cachealloc ARGS` is the launcher,
as `cachealloc ARGS` is."""
import importlib.metadata
import json
import os
import subprocess

__all__ = ["library_path", "launcher_path", "top_path", "stats", "__version__"]

try:
    __version__ = importlib.metadata.version("cachealloc")  # meson.build's, through the wheel
except importlib.metadata.PackageNotFoundError:
    __version__ = "unknown"

_PKG = os.path.dirname(os.path.abspath(__file__))
# pip puts this package in PREFIX/lib/pythonX.Y/site-packages and the commands in PREFIX/bin:
# the launcher's own path to the library, walked back.
_BIN = os.path.normpath(os.path.join(_PKG, "..", "..", "..", "..", "bin"))


def library_path():
    """The absolute path of the wheel's libcachealloc.so."""
    return os.path.join(_PKG, "lib", "libcachealloc.so")


def launcher_path():
    """The absolute path of the wheel's launcher, `cachealloc`."""
    return os.path.join(_BIN, "cachealloc")


def top_path():
    """The absolute path of the wheel's `cachealloc-top`."""
    return os.path.join(_BIN, "cachealloc-top")


def stats(pid=None):
    """What `cachealloc-top --json` shows for process pid (default: this one) as a dict, or
    None when that process publishes no statistics (not under the cache, or CACHEALLOC_STATS=0).
    Raises RuntimeError when cachealloc-top cannot be run or answers what is not JSON."""
    pid = os.getpid() if pid is None else int(pid)
    try:
        r = subprocess.run([top_path(), "--json", "--pid", str(pid)], capture_output=True,
                           text=True, timeout=30, check=False)
    except OSError as e:
        raise RuntimeError("cannot run %s: %s" % (top_path(), e)) from e
    try:
        doc = json.loads(r.stdout) if r.returncode == 0 else None
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        raise RuntimeError("cachealloc-top --json failed (%d): %s" % (r.returncode,
                           r.stderr.strip() or r.stdout.strip()))
    for proc in doc.get("processes", []):
        if proc.get("pid") == pid:
            return proc
    return None
