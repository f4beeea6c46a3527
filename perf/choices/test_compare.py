#!/usr/bin/env python3
"""perf/choices/test_compare.py: host self-test of perf/choices/compare on outputs recorded in the
Soft-RoCE VM (testdata/vm-gdr-*: UCP 1.13.1, rxe0, the plugin as committed and with 32-bit
atomics).  Checks that the reviewed list covers them, that an empty list fails, and that a moved
threshold or lane -- what a change in gdr_rc's iface_query would do -- fails."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
COMPARE = os.path.join(HERE, "compare")
REVIEWED = os.path.join(HERE, "reviewed.txt")


def run(raw, reviewed=REVIEWED):
    p = subprocess.run([sys.executable, COMPARE, "--from-raw", raw, "--reviewed", reviewed],
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


class Compare(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def mutate(self, name, old, new, tl="gdr_rc"):
        raw = os.path.join(self.tmp, name)
        shutil.copytree(os.path.join(HERE, "testdata", "vm-gdr-tests"), raw)
        path = os.path.join(raw, f"{tl}.txt")
        with open(path) as f:
            text = f.read()
        self.assertIn(old, text)
        with open(path, "w") as f:
            f.write(text.replace(old, new))
        return raw

    def test_recorded_runs_are_reviewed(self):
        for data in ("vm-gdr-tests", "vm-gdr-amo"):
            rc, out = run(os.path.join(HERE, "testdata", data))
            self.assertEqual(rc, 0, out)
            self.assertIn(" 0 not reviewed", out)
            self.assertIn("* tag_send 75663 B", out)  # gdr_rc's rendezvous starts here
            self.assertIn("tl.latency", out)  # ... because of the iface's latency

    def test_empty_review_fails(self):
        empty = os.path.join(self.tmp, "empty.txt")
        open(empty, "w").close()
        rc, out = run(os.path.join(HERE, "testdata", "vm-gdr-tests"), empty)
        self.assertEqual(rc, 1, out)
        self.assertIn("NOT REVIEWED: tag:tag_send@72:egr/bcopy=>egr/short", out)

    def test_zcopy_where_rc_verbs_copies_fails(self):
        # gdr_rc reporting another bandwidth or registration cost: eager zcopy from 8 KiB
        raw = self.mutate("zcopy", "0..<egr/short>..121..<egr/bcopy>..75663..<rndv>",
                          "0..<egr/short>..121..<egr/bcopy>..8192..<egr/zcopy>..75663..<rndv>")
        rc, out = run(raw)
        self.assertEqual(rc, 1, out)
        self.assertIn("@8192:egr/bcopy=>egr/zcopy", out)

    def test_get_threshold_moved_fails(self):
        raw = self.mutate("get", "get[0]: 0..<bcopy>..945..<zcopy>", "get[0]: 0..<bcopy>..2000..<zcopy>")
        rc, out = run(raw)
        self.assertEqual(rc, 1, out)
        self.assertIn("get0@945:zcopy=>bcopy", out)

    def test_lost_atomic_lane_fails(self):
        # rc_verbs getting device atomics (or gdr_rc losing them) changes the amo lane
        raw = self.mutate("amo", "amo_am(rc_verbs/rxe0:1)", "amo(rc_verbs/rxe0:1)", tl="rc_verbs")
        rc, out = run(raw)
        self.assertEqual(rc, 1, out)
        self.assertIn("NOT REVIEWED", out)

    def test_missing_block_fails(self):
        raw = self.mutate("block", "## features stream\n", "## features streamx\n")
        rc, out = run(raw)
        self.assertEqual(rc, 1, out)
        self.assertIn("block:missing", out)


if __name__ == "__main__":
    unittest.main()
