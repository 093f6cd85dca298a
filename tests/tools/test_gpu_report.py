#!/usr/bin/env python3
"""The GPU check's comparison and report (scripts/gpu/check.py), without a GPU or a pack: a
program's runs plainly and under the cache are stood in for, and what compare_runs(),
libraries() and markdown() make of them is read back.

Usage: test_gpu_report.py PATH/TO/scripts/gpu/check.py
"""
import contextlib
import importlib.util
import io
import json
import os
import sys
import tempfile
import time
import types
import unittest

spec = importlib.util.spec_from_file_location("gpu_check", sys.argv[1])
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)

SUMMARY = ("cachealloc: cuda: 1203 allocations served, 1190 cache hits, 2380 driver calls avoided,"
           " peak reserved 67108864 bytes\n")


def sort_output(digest, step_s, sorted_=True):
    """What lib_thrust.cu and lib_cub.cu print (sortcheck.cuh): a line, then the JSON."""
    return "thrust: 200 steps ...\n" + json.dumps(
        {"result": {"digest": digest, "sorted": sorted_, "same_keys": True, "keys": 4194304,
                    "steps": 200}, "step_s": step_s, "steps": 200}) + "\n"


class FakeRun:
    """A check's Run whose commands answer from a table: plain, then cached."""

    def __init__(self, sim, answers, build="/nonexistent"):
        self.sim = sim
        self.build = build
        self.answers = list(answers)
        self.calls = []

    def env(self, cached, extra=None):
        return {"cached": "1" if cached else "0"}

    def run(self, cmd, env, timeout):
        self.calls.append((cmd, env))
        rc, text = self.answers.pop(0)
        return rc, text, 0.5


def later(s=60):
    return time.monotonic() + s


class CompareRuns(unittest.TestCase):
    def test_same_result_different_step_times(self):
        r = FakeRun(False, [(0, sort_output("00ab", 0.00041)),
                            (0, sort_output("00ab", 0.00023) + SUMMARY)])
        res = check.compare_runs(r, (["p"], r.env(False)), (["p"], r.env(True)), later(), 60)
        self.assertEqual(res["status"], "same")
        self.assertEqual(res["plain_step_s"], 0.00041)
        self.assertEqual(res["cached_step_s"], 0.00023)
        self.assertEqual(res["cache"]["served"], 1203)

    def test_different_digest_differs(self):
        # The plain run is repeated (is the program deterministic?) and says the same as before.
        r = FakeRun(False, [(0, sort_output("00ab", 0.0004)),
                            (0, sort_output("00ac", 0.0002) + SUMMARY),
                            (0, sort_output("00ab", 0.0004))])
        res = check.compare_runs(r, (["p"], r.env(False)), (["p"], r.env(True)), later(), 60)
        self.assertEqual(res["status"], "differs")

    def test_unserved_on_a_gpu(self):
        r = FakeRun(False, [(0, sort_output("00ab", 0.0004)), (0, sort_output("00ab", 0.0004))])
        res = check.compare_runs(r, (["p"], r.env(False)), (["p"], r.env(True)), later(), 60)
        self.assertEqual(res["status"], "not served by the cache")

    def test_unsorted_both_ways_fails(self):
        # The program exits 1 after its JSON when a step was not sorted: the same both ways is
        # still a failure on a GPU.
        out = sort_output("00ab", 0.0004, sorted_=False)
        r = FakeRun(False, [(1, out), (1, out + SUMMARY)])
        res = check.compare_runs(r, (["p"], r.env(False)), (["p"], r.env(True)), later(), 60)
        self.assertEqual(res["status"], "fails with and without the cache")

    def test_simulator_fails_the_same_way(self):
        err = "thrust: radix_sort: failed on 1st step: cudaErrorCallRequiresNewerDriver\n"
        r = FakeRun(True, [(1, err), (1, "cachealloc 0.1.0: serving\n" + err + SUMMARY)])
        res = check.compare_runs(r, (["p"], r.env(False)), (["p"], r.env(True)), later(), 60)
        self.assertEqual(res["status"], "fails the same way with and without the cache")
        self.assertNotIn("plain_step_s", res)


class Libraries(unittest.TestCase):
    def test_sort_loops_are_among_the_libraries(self):
        self.assertIn("thrust", check.LIBRARIES)
        self.assertIn("cub", check.LIBRARIES)

    def test_unbuilt_programs_are_skipped_with_their_reason(self):
        with tempfile.TemporaryDirectory() as build:
            res = check.libraries(FakeRun(True, [], build), later())
        self.assertEqual(res["status"], "ok")
        self.assertEqual(set(res["libraries"]), set(check.LIBRARIES))
        self.assertIn("nvcc missing", res["libraries"]["thrust"]["why"])
        self.assertIn("header or library missing", res["libraries"]["cublas"]["why"])


class Markdown(unittest.TestCase):
    def report(self):
        libs = {
            "cublas": {"status": "same", "plain_wall_s": 0.48, "cached_wall_s": 0.47,
                       "cache": {"served": 63, "hits": 61, "avoided": 93}},
            "thrust": {"status": "same", "plain_step_s": 0.000412, "cached_step_s": 0.0003051,
                       "plain_wall_s": 1.2, "cached_wall_s": 0.9,
                       "cache": {"served": 1203, "hits": 1190, "avoided": 2380}},
            "cub": {"status": "skipped", "why": "not built (nvcc missing where the pack was made)"},
        }
        return {"mode": "real", "sections": {
            "environment": {"status": "ok", "gpu": "NVIDIA H100"},
            "frameworks": {"status": "ok", "workloads": {
                "torch": {"status": "same", "plain_step_s": 0.0053, "cached_step_s": 0.0029,
                          "plain_wall_s": 9.1, "cached_wall_s": 8.0, "cache": None}}},
            "libraries": {"status": "ok", "libraries": libs}}}

    def test_step_times_in_milliseconds(self):
        md = check.markdown(self.report())
        lines = md.splitlines()
        i = lines.index("## Libraries: plainly and under the cache")
        self.assertEqual(lines[i + 2], "| name | result | step ms plain / cached | wall s plain / "
                                       "cached | served / hits / avoided |")
        self.assertIn("| thrust | same | 0.412 / 0.305 | 1.2 / 0.9 | 1203 / 1190 / 2380 |", lines)
        self.assertIn("| cublas | same | - / - | 0.48 / 0.47 | 63 / 61 / 93 |", lines)
        self.assertIn("| cub | skipped: not built (nvcc missing where the pack was made) | - / - "
                      "| - / - | - / - / - |", lines)
        self.assertIn("| torch | same | 5.300 / 2.900 | 9.1 / 8.0 | - / - / - |", lines)


# The gpu-fence-cost probe's lines that the simulator's profile is made of (tests/gpu/fence_cost.c).
PROBE = """memset64MiB.us=812.5 calls=256 rounds=7
idle.t1.notiming.cuEventRecord.us=1.25
idle.t1.notiming.cuEventQuery.done.us=0.40
idle.t1.notiming.cuStreamWaitEvent.done.us=0.90
idle.t1.cuStreamQuery.idle.us=0.50
idle.t1.cuCtxSynchronize.us=1.10
idle.t1.cuMemsetD8Async.8B.us=2.50
idle.t1.cuMemsetD8Async.8B.until_done.us=7.00
idle.t1.cuMemsetD8Async.8B+cuCtxSynchronize.us=6.25
busy.t1.cuStreamQuery.busy.us=0.70
drain.us=900
"""

# bench-loop stood in for: each mode's rate and what it held, read from its flags and the
# environment the check gives it. Its first call snapshots report.md: what the check had saved
# before the loops began.
FAKE_LOOP = """#!/bin/bash
[ -f "$FAKE_OUT/before-loops.md" ] || cp "$FAKE_OUT/report.md" "$FAKE_OUT/before-loops.md"
case " $* " in
*" --sync-cache "*) echo pairs_per_s=100; echo sync_cache_reserved_bytes=2097152 ;;
*" --limit "*) echo pairs_per_s=400 ;;
*) if [ -z "$LD_PRELOAD" ]; then echo pairs_per_s=10
   elif [ "$CACHEALLOC_FENCES" = device ]; then echo pairs_per_s=200
   elif [ "$CACHEALLOC_FENCES" = events ]; then echo pairs_per_s=160
   elif [ "$CACHEALLOC_REUSE" = sync ]; then echo pairs_per_s=120
   elif [ "$CACHEALLOC_RESERVE_FACTOR" = 8 ]; then echo pairs_per_s=240
   else echo pairs_per_s=220; fi
   [ -n "$LD_PRELOAD" ] && echo cache_peak_reserved_bytes=4194304 ;;
esac
echo failures=0
"""

ROW = ("| 1 MiB, idle streams | 1 | 10 (2%) | 100 (25%, 2.0 MiB) | 200 (50%, 4.0 MiB) | "
       "160 (40%, 4.0 MiB) | 220 (55%, 4.0 MiB) | 120 (30%, 4.0 MiB) | 240 (60%, 4.0 MiB) | "
       "220 (55%, 4.0 MiB) | 400 | 2.20 | 1.10 | 1.00 |")


def program(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


class ReuseSection(unittest.TestCase):
    """The reuse section on the simulator's terms, with its programs stood in for: the report
    after each part, its table, and the simulator's profile from the probe's prices."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.tmp.name, "out")
        self.build = os.path.join(self.tmp.name, "build")
        os.makedirs(self.out)
        program(os.path.join(self.build, "tests", "gpu", "gpu-fence-cost"),
                "#!/bin/sh\ncat <<'EOF'\n%sEOF\n" % PROBE)
        program(os.path.join(self.build, "tests", "bench", "bench-loop"), FAKE_LOOP)
        os.environ["FAKE_OUT"] = self.out
        args = types.SimpleNamespace(sim=True, outdir=self.out, budget=600, jobs=1)
        self.r = check.Run(args, self.build, {"commit": "abc1234"})

    def tearDown(self):
        self.r.log.close()
        self.tmp.cleanup()

    def read(self, name):
        with open(os.path.join(self.out, name)) as f:
            return f.read()

    def test_figures_table_and_verdict(self):
        self.r.section("reuse", 300, check.reuse.section)
        sec = self.r.report["sections"]["reuse"]
        self.assertEqual(sec["status"], "ok")
        lines = self.read("report.md").splitlines()
        self.assertIn(ROW, lines)
        self.assertIn("Verdict: default >= sync-cache in 12 of 12 variants; default >= 0.95 x "
                      "the best fixed policy (device, events) in 12 of 12; where sync-cache won, "
                      "RESERVE_FACTOR=8 >= sync-cache in 0 of 0; noise: the default below 0.95 of "
                      "itself measured again in 0 of 12", lines)
        self.assertIn("| own | PyTorch's own caching allocator | skipped: needs a GPU (the "
                      "simulated driver runs no kernel) | - | - | - | - / - | - | - | - |", lines)
        self.assertEqual(json.loads(self.read("report.json"))["sections"]["reuse"]["loops"]
                         ["rows"]["random:1:16"]["default"]["pairs_per_s"], 220.0)
        self.assertEqual(check.reuse.summary_line(sec), "default >= sync-cache 12/12, >= 0.95 "
                         "x best fixed 12/12, < 0.95 x itself 0/12")

    def test_verdict_says_where_sync_cache_won_by_memory(self):
        t = check.reuse.reuse_table
        row = lambda sync, default, wide: {
            "sync": {"pairs_per_s": sync}, "default": {"pairs_per_s": default},
            "device": {"pairs_per_s": default}, "factor-8": {"pairs_per_s": wide}}
        rows = {"random:0:4": row(300, 200, 310), "random:0:16": row(300, 200, 250),
                "fixed:0:1": row(100, 200, 200)}
        self.assertIn("default >= sync-cache in 1 of 3 variants", t.verdict(rows))
        self.assertTrue(t.verdict(rows).endswith(
            "where sync-cache won, RESERVE_FACTOR=8 >= sync-cache in 1 of 2"))

    def test_modes_printed_for_bench_rank(self):
        """bench-rank.sh runs each mode from these lines: key, preloaded, environment, flags."""
        t = check.reuse.reuse_table
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(t.main(["reuse_table.py", "modes"]), 0)
        lines = out.getvalue().splitlines()
        self.assertEqual([x.split()[0] for x in lines], list(t.MODE_KEYS))
        self.assertIn("device 1 CACHEALLOC_FENCES=device --", lines)
        self.assertIn("sync 0 -- --sync-cache", lines)
        self.assertIn("again 1 --", lines)

    def test_verdict_counts_the_tables_noise(self):
        """The default measured twice: the variants where it fell below 0.95 of itself are
        counted, of those where both were measured."""
        t = check.reuse.reuse_table
        row = lambda default, again: {
            "sync": {"pairs_per_s": 100}, "default": {"pairs_per_s": default},
            "device": {"pairs_per_s": default}, "again": {"pairs_per_s": again}}
        rows = {"fixed:0:1": row(90, 100), "fixed:0:4": row(96, 100), "fixed:0:16": row(120, 100),
                "random:0:1": {"default": {"pairs_per_s": 80}}}
        self.assertTrue(t.verdict(rows).endswith(
            "noise: the default below 0.95 of itself measured again in 1 of 3"))
        self.assertEqual(t.ratios(rows["fixed:0:1"])[2], 0.9)
        self.assertIn("| 0.90 |", t.render(rows)[2])

    def test_report_saved_before_the_loops(self):
        self.r.section("reuse", 300, check.reuse.section)
        before = self.read("before-loops.md")
        self.assertIn("| SIMDEV_LAUNCH_US | 2.5 |", before)
        self.assertNotIn(ROW, before)

    def test_report_after_each_section(self):
        self.r.section("reuse", 300, check.reuse.section)

        def broken(r, deadline):  # the next section finds the last one's figures on disk
            self.assertIn(ROW, self.read("report.md").splitlines())
            raise RuntimeError("cut short")

        self.r.section("integration", 60, broken)
        md = self.read("report.md")
        self.assertIn(ROW, md.splitlines())
        self.assertIn("| integration | error |", md)

    def test_profile_file(self):
        self.r.section("reuse", 300, check.reuse.section)
        text = self.read("simdev-profile.env")
        values = dict(l.split("=", 1) for l in text.splitlines() if not l.startswith("#"))
        self.assertEqual(values, {
            "SIMDEV_LAUNCH_US": "2.5", "SIMDEV_OP_LATENCY_US": "6.5", "SIMDEV_SYNC_US": "3.75",
            "SIMDEV_EVENT_RECORD_US": "1.25", "SIMDEV_EVENT_QUERY_US": "0.4",
            "SIMDEV_STREAM_QUERY_US": "0.5", "SIMDEV_STREAM_WAIT_US": "0.9"})
        self.assertIn("# GPU: the simulated driver (tests/simdevice)", text)
        self.assertIn("# pack commit: abc1234", text)

    def test_no_prices_no_profile(self):
        program(os.path.join(self.build, "tests", "gpu", "gpu-fence-cost"), "#!/bin/sh\nexit 1\n")
        self.r.section("reuse", 300, check.reuse.section)
        self.assertFalse(os.path.exists(os.path.join(self.out, "simdev-profile.env")))
        self.assertIn("No profile file: the probe gave no prices (exit 1)", self.read("report.md"))


class TorchRows(unittest.TestCase):
    def test_counters_beside_the_cached_rows(self):
        sec = {"status": "ok", "probe": {"status": "ok"}, "torch": {
            "own": {"status": "ok", "what": "own", "step_s": 0.0022, "wall_s": 9.0},
            "nocache-cache": {"status": "ok", "what": "cached", "step_s": 0.0024, "wall_s": 8.1,
                              "same_losses_as_own": True,
                              "cache": {"served": 1667, "hits": 1653},
                              "counters": {"sync_wait_ns": 12500000, "fence_wait_ns": 3000000,
                                           "fence_waits": 40, "grow_ns": 800000, "growths": 7}},
            "pluggable": {"status": "ok", "what": "pluggable", "step_s": 0.0021, "wall_s": 8.0,
                          "same_losses_as_own": False, "counters": {},
                          "counters_why": "not in this build's statistics"}}}
        lines = check.reuse.markdown(sec)
        self.assertIn("| own | own | ok | 2.200 | 9.0 | - | - / - | - | - | - |", lines)
        self.assertIn("| nocache-cache | cached | ok | 2.400 | 8.1 | yes | 1667 / 1653 | 12.5 | "
                      "3.0 (40) | 0.8 (7) |", lines)
        self.assertIn("| pluggable | pluggable | ok; counters: not in this build's statistics | "
                      "2.100 | 8.0 | no | - / - | - | - | - |", lines)


    def test_counters_summed_over_devices_when_published(self):
        out = json.dumps({"result": ["0x1p+0"], "step_s": 0.0024, "cache_stats": {"devices": [
            {"device": 0, "sync_wait_ns": 5000, "fence_waits": 2},
            {"device": 1, "sync_wait_ns": 7000, "fence_waits": 1}]}})
        r = FakeRun(False, [(0, SUMMARY + out + "\n")])
        row = check.reuse.torch_row(r, ["w"], {}, 90, ["0x1p+0"])
        self.assertEqual(row["counters"], {"sync_wait_ns": 12000, "fence_waits": 3})
        self.assertTrue(row["same_losses_as_own"])
        self.assertNotIn("counters_why", row)

    def test_counters_absent_say_why(self):
        out = json.dumps({"result": [], "step_s": 0.0024, "cache_stats": {"devices": [
            {"device": 0, "reserved_bytes": 2097152}]}})
        row = check.reuse.torch_row(FakeRun(False, [(0, out + "\n")]), ["w"], {}, 90, None)
        self.assertEqual(row["counters"], {})
        self.assertEqual(row["counters_why"], "not in this build's statistics")
        out = json.dumps({"result": [], "step_s": 0.0024,
                          "cache_stats": {"error": "no statistics (exit 127: )"}})
        row = check.reuse.torch_row(FakeRun(False, [(0, out + "\n")]), ["w"], {}, 90, None)
        self.assertEqual(row["counters_why"], "no statistics (exit 127: )")


class Variants(unittest.TestCase):
    def test_a_subset_in_its_order(self):
        self.assertEqual(check.reuse.reuse_table.parse_variants("random:1:4, fixed:0:1"),
                         ["random:1:4", "fixed:0:1"])
        self.assertEqual(len(check.reuse.reuse_table.parse_variants("all")), 12)

    def test_a_bad_variant_is_named(self):
        for bad in ("fixed:2:1", "big:0:1", "fixed:0", "fixed:0:0", ""):
            with self.assertRaises(ValueError):
                check.reuse.reuse_table.parse_variants(bad)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
