"""python3 -m cachealloc [OPTION]... [--] PROGRAM [ARGUMENT]...: the launcher (cachealloc(1)),
which this process becomes, so that the exit status and the options are the launcher's own."""
import os
import sys

from . import launcher_path


def main():
    exe = launcher_path()
    try:
        os.execv(exe, ["cachealloc"] + sys.argv[1:])
    except OSError as e:
        print("cachealloc: cannot run the launcher %s: %s" % (exe, e.strerror), file=sys.stderr)
        return 125  # the launcher's own status for "the launcher failed"
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
