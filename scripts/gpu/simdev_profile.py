"""The simulator's price profile from the `gpu-fence-cost` probe's figures (tests/gpu/fence_cost.c):
the file OUTDIR/simdev-profile.env of the GPU check, which the simulated driver loads with
SIMDEV_PROFILE=PATH and which becomes a committed profile as docs/gpu.md says.

Each price is the probe's median for one calling thread on an idle device, in microseconds, for
events made without timing (as the cache makes them). The simulator prices calls as floors
(docs/simdevice.md, "The cost model"): a memset is queued in SIMDEV_LAUNCH_US, completes no
sooner than SIMDEV_OP_LATENCY_US after it was queued, and a synchronization that waits costs at
least SIMDEV_SYNC_US. So the latency is the memset's time until a query finds it done, less one
query, and the synchronization is the memset-and-synchronize less the memset's queueing.
"""

# (variable, how it is read from the probe's key=value lines, what the comment says)
PRICES = (
    ("SIMDEV_LAUNCH_US", lambda k: k["idle.t1.cuMemsetD8Async.8B.us"],
     "cuMemsetD8Async of 8 bytes, queueing"),
    ("SIMDEV_OP_LATENCY_US", lambda k: k["idle.t1.cuMemsetD8Async.8B.until_done.us"]
     - k["idle.t1.cuStreamQuery.idle.us"], "the memset until its stream is found done, less a query"),
    ("SIMDEV_SYNC_US", lambda k: k["idle.t1.cuMemsetD8Async.8B+cuCtxSynchronize.us"]
     - k["idle.t1.cuMemsetD8Async.8B.us"], "the memset and cuCtxSynchronize, less the queueing"),
    ("SIMDEV_EVENT_RECORD_US", lambda k: k["idle.t1.notiming.cuEventRecord.us"],
     "cuEventRecord"),
    ("SIMDEV_EVENT_QUERY_US", lambda k: k["idle.t1.notiming.cuEventQuery.done.us"],
     "cuEventQuery of a done event"),
    ("SIMDEV_STREAM_QUERY_US", lambda k: k["idle.t1.cuStreamQuery.idle.us"],
     "cuStreamQuery of an idle stream"),
    ("SIMDEV_STREAM_WAIT_US", lambda k: k["idle.t1.notiming.cuStreamWaitEvent.done.us"],
     "cuStreamWaitEvent on a done event"),
)
# Read beside them, for the person who commits the profile: what the simulator prices alike.
NOTED = ("busy.t1.notiming.cuEventQuery.pending.us", "busy.t1.cuStreamQuery.busy.us",
         "idle.t1.cuCtxSynchronize.us", "idle.t16.notiming.cuEventRecord.us",
         "idle.t16.notiming.cuEventQuery.done.us")


def figures(text):
    """The probe's `key=number` figures (its other lines, and words after a number, ignored)."""
    out = {}
    for line in text.splitlines():
        if "=" not in line:
            continue
        k, v = line.split("=", 1)
        try:
            out[k.strip()] = float(v.split()[0])
        except (ValueError, IndexError):
            continue
    return out


def prices(text):
    """{SIMDEV variable: microseconds} of every price the probe's output gives; a price whose
    figures are missing is left out, and a negative difference (noise) becomes 0.01."""
    k = figures(text)
    out = {}
    for name, get, _ in PRICES:
        try:
            out[name] = round(max(0.01, get(k)), 2)
        except KeyError:
            continue
    return out


def profile_text(probe_output, gpu, driver, commit):
    """The profile file: comments naming the device, driver and pack, then SIMDEV_NAME=value
    lines, each after a comment saying which of the probe's figures it is."""
    got = prices(probe_output)
    k = figures(probe_output)
    L = ["# The simulator's prices measured by the GPU check's gpu-fence-cost probe.",
         "# GPU: %s" % (gpu or "unknown"), "# driver: %s" % (driver or "unknown"),
         "# pack commit: %s" % (commit or "unknown"),
         "# Load with SIMDEV_PROFILE=PATH; docs/gpu.md says how it becomes a committed profile."]
    for name, _, what in PRICES:
        if name in got:
            L += ["# %s" % what, "%s=%s" % (name, fmt(got[name]))]
        else:
            L.append("# %s: not measured (the probe gave no figure for it)" % name)
    noted = ["%s %s us" % (n, fmt(k[n])) for n in NOTED if n in k]
    if noted:
        L.append("# beside them (not priced apart by the simulator): " + "; ".join(noted))
    return "\n".join(L) + "\n"


def fmt(x):
    return ("%.2f" % x).rstrip("0").rstrip(".")
