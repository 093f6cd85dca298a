#!/usr/bin/env python3
"""Framework workloads of scripts/gpu-check.sh, each run once plainly and once under the cache.

    workloads.py torch|torch-pluggable|cupy|jax|numba [LIBCACHEALLOC]

Prints one JSON object on its last line: "result" (numbers that must be identical with and
without the cache, floats as hex strings so that equality is exact), "step_s" (median time of a
step after warm-up) and "steps"; with GPU_CHECK_TOP set (the path of cachealloc-top), the PyTorch
workloads add "cache_stats": the cache's statistics of the process as that tool reads them.
Exits 77 when the framework is not installed or sees no GPU.
"""
import json
import os
import subprocess
import sys
import time


def skip(why):
    print(json.dumps({"skipped": why}))
    sys.exit(77)


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else 0.0


def cache_stats():
    """The cache's statistics of this process, per device, as cachealloc-top --json reads them
    while the process lives (GPU_CHECK_TOP names the tool), or why there are none."""
    top = os.environ.get("GPU_CHECK_TOP")
    if not top:
        return None
    time.sleep(0.3)  # the cache's monitor thread publishes every 250 ms
    try:
        p = subprocess.run([top, "--json", "--pid", str(os.getpid())], capture_output=True,
                           text=True, errors="replace", timeout=20)
        procs = json.loads(p.stdout or "{}").get("processes", [])
    except (OSError, ValueError, subprocess.TimeoutExpired) as e:
        return {"error": "%s: %s" % (type(e).__name__, e)}
    devs = [d for pr in procs for d in pr.get("devices", [])]
    if not devs:
        return {"error": "no statistics (exit %s: %s)" % (p.returncode, p.stderr.strip()[-200:])}
    return {"devices": devs}


def torch_train(pluggable=None):
    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
    except ImportError:
        skip("torch not installed")
    if not torch.cuda.is_available():
        skip("torch sees no GPU")
    if pluggable:
        alloc = torch.cuda.memory.CUDAPluggableAllocator(
            pluggable, "cachealloc_pluggable_alloc", "cachealloc_pluggable_free")
        torch.cuda.memory.change_current_allocator(alloc)
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(64 * 8 * 8, 512), nn.ReLU(),
                          nn.Linear(512, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    xs = torch.randn(128, 3, 32, 32, generator=g)
    ys = torch.randint(0, 10, (128,), generator=g)
    losses, times = [], []
    for _ in range(40):
        t0 = time.perf_counter()
        x, y = xs.cuda(), ys.cuda()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
    res = {"result": [float(v).hex() for v in losses], "first_loss": losses[0],
           "last_loss": losses[-1], "step_s": median(times[5:]), "steps": len(times)}
    stats = cache_stats()
    if stats is not None:
        res["cache_stats"] = stats
    return res


def cupy_libs():
    try:
        import cupy
    except ImportError:
        skip("cupy not installed")
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - any failure means no usable GPU
        skip("cupy sees no GPU: %s" % e)
    cupy.cuda.set_allocator(None)  # CuPy's pool off: every array reaches the driver
    rs = cupy.random.RandomState(seed=0)  # cuRAND
    out, times = [], []
    for _ in range(30):
        t0 = time.perf_counter()
        a = rs.standard_normal((512, 512), dtype=cupy.float32)
        b = a @ a.T  # cuBLAS
        f = cupy.fft.fft2(a)  # cuFFT
        s = cupy.sort(a.ravel())[:8]  # CUB inside CuPy
        cupy.cuda.runtime.deviceSynchronize()
        times.append(time.perf_counter() - t0)
        out.append(float(b.sum()).hex())
        out.append(float(cupy.abs(f).sum()).hex())
        out.append(float(s.sum()).hex())
    res = {"result": out, "step_s": median(times[5:]), "steps": len(times)}
    try:  # NCCL, one rank
        from cupy.cuda import nccl
        comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
        x = cupy.arange(1 << 20, dtype=cupy.float32)
        y = cupy.empty_like(x)
        st = cupy.cuda.Stream.null
        comm.allReduce(x.data.ptr, y.data.ptr, x.size, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, st.ptr)
        st.synchronize()
        res["nccl"] = float(y.sum()).hex()
        res["result"].append(res["nccl"])
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        res["nccl"] = "unavailable: %s" % e
    return res


def jax_step():
    os.environ.setdefault("XLA_PYTHON_CLIENT_ALLOCATOR", "platform")
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        skip("jax not installed")
    if not any(d.platform == "gpu" for d in jax.devices()):
        skip("jax sees no GPU")
    key = jax.random.PRNGKey(0)
    k1, k2, k3 = jax.random.split(key, 3)
    w = jax.random.normal(k1, (256, 256)) * 0.05
    x = jax.random.normal(k2, (512, 256))
    y = jax.random.normal(k3, (512, 256))

    def loss(w):
        return jnp.mean((jnp.tanh(x @ w) - y) ** 2)

    step = jax.jit(lambda w: w - 0.1 * jax.grad(loss)(w))
    lossj = jax.jit(loss)
    out, times = [], []
    for _ in range(40):
        t0 = time.perf_counter()
        w = step(w)
        v = float(lossj(w))
        times.append(time.perf_counter() - t0)
        out.append(v.hex())
    return {"result": out, "step_s": median(times[5:]), "steps": len(times)}


def numba_arrays():
    try:
        import numpy as np
        from numba import cuda
    except ImportError:
        skip("numba not installed")
    if not cuda.is_available():
        skip("numba sees no GPU")
    rng = np.random.default_rng(0)
    host = rng.standard_normal(1 << 18).astype(np.float32)
    out, times = [], []
    for i in range(100):
        t0 = time.perf_counter()
        d = cuda.to_device(host * (i + 1))
        e = cuda.device_array_like(d)
        e.copy_to_device(d)
        back = e.copy_to_host()
        del d, e
        times.append(time.perf_counter() - t0)
        out.append(float(back.sum(dtype=np.float64)).hex())
    return {"result": out, "step_s": median(times[5:]), "steps": len(times)}


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    what = sys.argv[1]
    if what == "torch":
        r = torch_train()
    elif what == "torch-pluggable":
        if len(sys.argv) < 3:
            print("torch-pluggable needs the library's path", file=sys.stderr)
            return 2
        r = torch_train(pluggable=sys.argv[2])
    elif what == "cupy":
        r = cupy_libs()
    elif what == "jax":
        r = jax_step()
    elif what == "numba":
        r = numba_arrays()
    else:
        print("unknown workload %s" % what, file=sys.stderr)
        return 2
    print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
