#!/usr/bin/env python3
"""perf/choices/test_compare.py: host self-test of perf/choices/compare on outputs recorded in the
Soft-RoCE VM, rxe0, 2026-12-05 (testdata/vm-ucx-1.13.1: UCP 1.13.1's protocol v1, CI's rdma stage;
testdata/vm-ucx-1.18.1: Debian 13's UCX 1.18.1, protocol v2 tables, CI's leg; testdata/vm-ucx-1.22.0:
upstream UCX 1.22.0, its table layout, CI's other leg).  Checks that the
reviewed list covers them, that an empty list fails, and that a moved threshold, protocol or
lane -- what a change in gdr_rc's iface_query would do -- fails."""
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

    def mutate(self, name, old, new, tl="gdr_rc", data="vm-ucx-1.13.1"):
        raw = os.path.join(self.tmp, name)
        shutil.copytree(os.path.join(HERE, "testdata", data), raw)
        path = os.path.join(raw, f"{tl}.txt")
        with open(path) as f:
            text = f.read()
        self.assertIn(old, text)
        with open(path, "w") as f:
            f.write(text.replace(old, new))
        return raw

    def test_recorded_runs_are_reviewed(self):
        rc, out = run(os.path.join(HERE, "testdata", "vm-ucx-1.13.1"))
        self.assertEqual(rc, 0, out)
        self.assertIn(" 0 not reviewed", out)
        self.assertIn("* tag_send 394325 B", out)  # rc_verbs' rendezvous starts 8 B earlier
        self.assertIn("tl.am_bcopy", out)  # ... because of am.max_bcopy
        rc, out = run(os.path.join(HERE, "testdata", "vm-ucx-1.18.1"))
        self.assertEqual(rc, 0, out)
        self.assertIn(" 0 not reviewed", out)
        self.assertIn("software emulation on RC/rxe0:1", out)  # v2 tables were read
        self.assertIn("[remote memory read by ucp_get* into host memory from host]", out)
        rc, out = run(os.path.join(HERE, "testdata", "vm-ucx-1.22.0"))  # 1.22's table layout
        self.assertEqual(rc, 0, out)
        self.assertIn(" 0 not reviewed", out)
        self.assertIn("* 246963 B", out)  # its rendezvous 3 B before rc_verbs'

    def test_empty_review_fails(self):
        empty = os.path.join(self.tmp, "empty.txt")
        open(empty, "w").close()
        rc, out = run(os.path.join(HERE, "testdata", "vm-ucx-1.13.1"), empty)
        self.assertEqual(rc, 1, out)
        self.assertIn("NOT REVIEWED: tag:tag_send@72:egr/bcopy=>egr/short", out)
        rc, out = run(os.path.join(HERE, "testdata", "vm-ucx-1.18.1"), empty)
        self.assertEqual(rc, 1, out)
        self.assertIn("NOT REVIEWED: tag:v2:tagged,message,by,ucp_tag_send*,from,host,memory@72:"
                      "eager,copy-in,copy-out,on,RC/rxe0:1=>eager,short,on,RC/rxe0:1", out)

    def test_zcopy_where_rc_verbs_copies_fails(self):
        # gdr_rc reporting another bandwidth or registration cost: eager zcopy from 8 KiB
        raw = self.mutate("zcopy", "0..<egr/short>..121..<egr/bcopy>..394333..<rndv>",
                          "0..<egr/short>..121..<egr/bcopy>..8192..<egr/zcopy>..394333..<rndv>")
        rc, out = run(raw)
        self.assertEqual(rc, 1, out)
        self.assertIn("@8192:egr/bcopy=>egr/zcopy", out)

    def test_v2_rendezvous_where_rc_verbs_copies_fails(self):
        # protocol v2: gdr_rc's figures making UCP take a rendezvous for large tag messages
        raw = self.mutate("v2rndv", "8249..inf | multi-frag eager copy-in copy-out",
                          "8249..inf | rendezvous zero-copy read from remote", data="vm-ucx-1.18.1")
        rc, out = run(raw)
        self.assertEqual(rc, 1, out)
        self.assertIn("multi-frag,eager,copy-in,copy-out,on,RC/rxe0:1=>rendezvous,zero-copy", out)

    def test_v2_fragment_edge_moved_fails(self):
        # one fragment up to 8299 B over gdr_rc: only 8248 (am.max_bcopy 8256 vs 8255) is argued
        raw = self.mutate("v2frag", "121..8248 | eager copy-in copy-out", "121..8299 | eager copy-in copy-out",
                          data="vm-ucx-1.18.1")
        with open(os.path.join(raw, "gdr_rc.txt")) as f:
            text = f.read()
        with open(os.path.join(raw, "gdr_rc.txt"), "w") as f:
            f.write(text.replace("8249..inf | multi-frag eager", "8300..inf | multi-frag eager"))
        rc, out = run(raw)
        self.assertEqual(rc, 1, out)
        self.assertIn("@8249:multi-frag,eager,copy-in,copy-out,on,RC/rxe0:1=>eager,copy-in,copy-out", out)

    def test_v2_missing_table_fails(self):
        raw = self.mutate("v2table", "remote memory read by ucp_get*", "remote memory read by ucp_gets*",
                          data="vm-ucx-1.18.1")
        rc, out = run(raw)
        self.assertEqual(rc, 1, out)
        self.assertIn("v2:remote,memory,read,by,ucp_get*,into,host,memory,from,host:missing", out)

    def test_v2_operation_refused_fails(self):
        # an operation UCP completes over rc_verbs but refuses over gdr_rc (no protocol)
        raw = self.mutate("v2op", "## op get 8 B: Success", "## op get 8 B: Unsupported operation",
                          data="vm-ucx-1.18.1")
        rc, out = run(raw)
        self.assertEqual(rc, 1, out)
        self.assertIn(":op:get,8,B:Success=>Unsupported,operation", out)

    def test_get_threshold_moved_fails(self):
        raw = self.mutate("get", "get[0]: 0..<bcopy>..945..<zcopy>", "get[0]: 0..<bcopy>..2000..<zcopy>")
        rc, out = run(raw)
        self.assertEqual(rc, 1, out)
        self.assertIn("get0@945:zcopy=>bcopy", out)

    def test_atomics_on_another_lane_fails(self):
        # UCP putting gdr_rc's atomics anywhere but on gdr_rc's own lane
        raw = self.mutate("amo", "amo(gdr_rc/rxe0:1)", "amo(ud_verbs/rxe0:1)")
        rc, out = run(raw)
        self.assertEqual(rc, 1, out)
        self.assertIn("NOT REVIEWED", out)
        self.assertIn("amo(ud_verbs/rxe0:1)", out)

    def test_missing_block_fails(self):
        raw = self.mutate("block", "## features stream\n", "## features streamx\n")
        rc, out = run(raw)
        self.assertEqual(rc, 1, out)
        self.assertIn("block:missing", out)


if __name__ == "__main__":
    unittest.main()
