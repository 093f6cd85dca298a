#!/usr/bin/env python3
"""The GPU check's comparison and report (scripts/gpu/check.py), without a GPU or a pack: a
program's runs plainly and under the cache are stood in for, and what compare_runs(),
libraries() and markdown() make of them is read back.

Usage: test_gpu_report.py PATH/TO/scripts/gpu/check.py
"""
import importlib.util
import json
import sys
import tempfile
import time
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


class LoopTable(unittest.TestCase):
    """The loops' table: both fence policies beside sync-cache, each as a share of the limit, and
    what each holds."""

    def test_policies_and_reserved_side_by_side(self):
        loops = {"idle.sync.1": {"pairs_per_s": "100000", "sync_cache_reserved_bytes": "2097152"},
                 "idle.cache.1": {"pairs_per_s": "150000",
                                  "cache_peak_reserved_bytes": "4194304"},
                 "idle.events.1": {"pairs_per_s": "50000",
                                   "cache_peak_reserved_bytes": "3145728"},
                 "idle.limit.1": {"pairs_per_s": "200000"},
                 "idle.plain.1": {"pairs_per_s": "9000"}}
        rep = {"mode": "real", "sections": {"bench": {
            "status": "ok", "pairs": {}, "loops": loops, "replays": {}}}}
        lines = check.markdown(rep).splitlines()
        self.assertIn("| idle | 1 | 9000 | 100000 | 150000 | 50000 | 200000 | 50.0% | 75.0% | "
                      "25.0% | 2.0 / 4.0 / 3.0 |", lines)

if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
