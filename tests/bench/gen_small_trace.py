#!/usr/bin/env python3
"""Writes small_trace.csv: a synthetic training-loop trace in the trace CSV format, small
enough for a test (a few hundred events, about 200 MB live at peak) and deterministic.

It has what the real traces have: parameters allocated once and never freed, activations
allocated in the forward pass and freed in reverse in the backward pass, short-lived
temporaries, addresses reused after their free, a free of memory allocated before the
recording began (no A: a replay must skip it), and the recording allocator's own FC/SA/SF
events (a replay ignores them). Run it again to regenerate: python3 gen_small_trace.py > small_trace.csv
"""
import sys

SIZES = [512, 4096, 131072, 1572864, 3145728, 25165824]


def main():
    seed = 12345
    def rand(n):
        nonlocal seed
        seed = (seed * 1103515245 + 12345) % (1 << 31)
        return (seed >> 8) % n

    rows = []
    free_addrs = []
    next_addr = [0x7f0000000000]

    def addr():
        if free_addrs and rand(2) == 0:
            return free_addrs.pop(rand(len(free_addrs)))
        a = next_addr[0]
        next_addr[0] += 0x4000000
        return a

    def ev(kind, handle, size):
        rows.append((kind, handle, size))

    def alloc(size):
        a = addr()
        ev('A', a, size)
        return (a, size)

    def free(block):
        ev('F', block[0], block[1])
        ev('FC', block[0], block[1])
        free_addrs.append(block[0])

    ev('SA', 0x7e0000000000, 20971520)
    ev('F', 0x7e0000000000, 1048576)          # allocated before the window: no A
    params = [alloc(s) for s in (262144, 1048576, 4194304, 8388608, 8388608, 33554432)]
    for _ in range(10):
        acts = []
        for _layer in range(8):
            acts.append(alloc(SIZES[rand(len(SIZES))]))
            tmp = alloc(SIZES[rand(4)])
            free(tmp)
        loss = alloc(512)
        grads = []
        for act in reversed(acts):
            g = alloc(act[1])
            free(act)
            grads.append(g)
            if len(grads) > 2:
                free(grads.pop(0))
        for g in grads:
            free(g)
        free(loss)
    ev('SF', 0x7e0000000000, 20971520)

    out = sys.stdout
    out.write('seq,time_us,event,handle,size,stream\n')
    for seq, (kind, handle, size) in enumerate(rows):
        out.write(f'{seq},,{kind},{handle:#x},{size},0\n')
    del params


if __name__ == '__main__':
    main()
