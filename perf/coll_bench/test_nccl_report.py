#!/usr/bin/env python3
"""Self-test of perf/coll_bench/nccl_report: pairing, ratios, the goal lines, the outputs, and a
wrong result failing the report.  The inputs are gdr_perftest JSON documents written here with
chosen numbers (the report's arithmetic is what is checked, not a measurement)."""

import csv
import importlib.machinery
import importlib.util
import json
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.realpath(__file__))
loader = importlib.machinery.SourceFileLoader("nccl_report", os.path.join(HERE, "nccl_report"))
spec = importlib.util.spec_from_loader("nccl_report", loader)
nccl_report = importlib.util.module_from_spec(spec)
loader.exec_module(nccl_report)

MiB = 1 << 20


def row(lib, size, us, ranks=2, op="allreduce", dtype="float", check="ok"):
    factor = 2 * (ranks - 1) / ranks if op == "allreduce" else (ranks - 1) / ranks
    algbw = size / (us * 1e-6) / 1e9
    return dict(test=op, library=lib, size=size, dtype=dtype, ranks=ranks, avg_us=us,
                algbw_GBps=algbw, busbw_GBps=algbw * factor, check=check)


def document(rows, nccl="NCCL 2.30.7 (libnccl.so.2)"):
    return dict(tool="gdr_perftest", nccl=nccl, results=rows)


class NcclReport(unittest.TestCase):
    def run_report(self, docs):
        tmp = tempfile.mkdtemp()
        paths = []
        for i, doc in enumerate(docs):
            paths.append(os.path.join(tmp, f"r{i}.json"))
            with open(paths[-1], "w") as f:
                json.dump(doc, f)
        prefix = os.path.join(tmp, "out", "cmp")
        rc = nccl_report.main(["--out", prefix] + paths)
        return rc, prefix

    def test_ratios_and_goals_met(self):
        rows = [row("ucp_cpp", 8, 30.0), row("nccl", 8, 20.0),          # 1.5x the time: met
                row("ucp_cpp", 64 * MiB, 600.0), row("nccl", 64 * MiB, 400.0),  # busbw 0.667
                row("ucp_cpp", 256 * MiB, 2000.0), row("nccl", 256 * MiB, 1500.0)]
        rc, prefix = self.run_report([document(rows)])
        self.assertEqual(rc, 0)
        md = open(prefix + ".md").read()
        self.assertIn("busbw >= 0.5 x NCCL from 64 MiB: met (lowest 0.667 at 64 MiB)", md)
        self.assertIn("time at 8 B <= 2.0 x NCCL: met (30.00 us against 20.00: 1.500)", md)
        self.assertIn("| 256 MiB | 2000.00 | 1500.00 | 1.333 |", md)
        self.assertIn("NCCL 2.30.7", md)
        with open(prefix + ".csv") as f:
            got = list(csv.DictReader(f))
        self.assertEqual([int(r["size"]) for r in got], [8, 64 * MiB, 256 * MiB])
        self.assertAlmostEqual(float(got[1]["busbw_ratio"]), 400 / 600, places=6)
        doc = json.load(open(prefix + ".json"))
        self.assertEqual(len(doc["rows"]), 3)

    def test_goals_not_met_are_said(self):
        rows = [row("ucp_cpp", 8, 50.0), row("nccl", 8, 20.0),
                row("ucp_cpp", 128 * MiB, 3000.0), row("nccl", 128 * MiB, 1000.0)]
        rc, prefix = self.run_report([document(rows)])
        self.assertEqual(rc, 0)  # a goal not met is a finding, not a failure of the report
        md = open(prefix + ".md").read()
        self.assertIn("from 64 MiB: NOT met (lowest 0.333 at 128 MiB)", md)
        self.assertIn("time at 8 B <= 2.0 x NCCL: NOT met", md)

    def test_one_rank_has_no_goal_and_unpaired_sizes_are_left_out(self):
        rows = [row("ucp_cpp", 8, 10.0, ranks=1), row("nccl", 8, 9.0, ranks=1),
                row("ucp_cpp", 16, 10.0, ranks=1)]
        rc, prefix = self.run_report([document(rows)])
        self.assertEqual(rc, 0)
        md = open(prefix + ".md").read()
        self.assertIn("1 rank: no goal", md)
        self.assertNotIn("| 16 B |", md)
        self.assertFalse(os.path.exists(prefix + ".png"))  # busbw 0: no plot, no failure

    def test_real_run_of_one_rank_on_an_h200(self):
        # gdr_perftest --library both -N 1 -m cuda -t allreduce -b 8 -e 16M -n 5 -w 2 on one H200
        # with NCCL 2.30.7 built by tests/device/build-nccl (2026-12-02): its JSON as written
        rc, prefix = self.run_report([json.load(open(os.path.join(HERE, "testdata",
                                                                   "nccl-1rank-allreduce.json")))])
        self.assertEqual(rc, 0)
        rows = json.load(open(prefix + ".json"))["rows"]
        self.assertEqual(len(rows), 22)  # 8 B ... 16 MiB, each size with both libraries
        self.assertTrue(all(r["check"] == "ok" for r in rows))
        self.assertEqual(json.load(open(prefix + ".json"))["nccl"],
                         ["NCCL 2.30.7 (/tmp/nccl/build/lib/libnccl.so.2)"])

    def test_wrong_result_fails(self):
        rows = [row("ucp_cpp", 8, 10.0), row("nccl", 8, 9.0, check="FAILED")]
        rc, _ = self.run_report([document(rows)])
        self.assertEqual(rc, 1)

    def test_no_pairs_fails(self):
        rc, _ = self.run_report([document([row("ucp_cpp", 8, 10.0)])])
        self.assertEqual(rc, 1)


if __name__ == "__main__":
    unittest.main()
