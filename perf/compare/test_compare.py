#!/usr/bin/python3
"""Host tests of perf/compare (the gdr_compare package): output parsers (on outputs captured from
ucx_perftest 1.13.1, perftest 4.5, gdr_perftest 0.1.0 and coll_bench in the Soft-RoCE VM), the
comparison tables (transports, wrapper, collectives), device facts from gdr-doctor, tool discovery,
and the pair runner's guarantees (a server that never listens, or a client that fails, ends the
pair promptly instead of hanging it).  GDR_DOCTOR=<gdr-doctor> adds the doctor's real JSON of the
repository's sysfs fixtures (CTest sets it when the doctor is built)."""
import contextlib
import io
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import types
import unittest
import unittest.mock

sys.dont_write_bytecode = True  # keep the source tree clean of __pycache__
HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, HERE)

from gdr_compare import callgrind, cli, devices, launch, parsers, plan  # noqa: E402
from gdr_compare import interleave, measure, report, tables, tools  # noqa: E402
from gdr_compare.measure import Results  # noqa: E402
from gdr_compare.sections import coll, cost, raw, registration, ucx, wrapper  # noqa: E402
from gdr_compare.units import BUSBW, BW, LAT, MR, MiB, TIME  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "fixtures")


def captured(name):
    """A tool's output, captured as it was printed (testdata/README.md says where)."""
    with open(os.path.join(HERE, "testdata", name)) as f:
        return f.read()


UCX_LAT = captured("ucx_perftest-tag_lat.txt")
UCX_BW_AVG_INF = captured("ucx_perftest-bw-avg-inf.txt")
UCX_ALL_INF = captured("ucx_perftest-all-inf.txt")
UCX_FAILED = captured("ucx_perftest-failed.txt")
PT_LAT = captured("ib_write_lat.txt")
PT_LAT_UNCALIBRATED = captured("ib_write_lat-uncalibrated.txt")
PT_BW = captured("ib_write_bw.txt")
GP_TAG_LAT = captured("gdr_perftest-tag_lat.txt")
GP_PUT_BW = captured("gdr_perftest-put_bw.txt")
GP_COLL = captured("gdr_perftest-coll.txt")
CB_ALLTOALL = captured("coll_bench-alltoall.txt")


class Parsers(unittest.TestCase):
    def test_ucx_latency_is_the_median(self):
        self.assertEqual(parsers.parse_ucx_perftest(UCX_LAT, LAT), (43.5, None))

    def test_ucx_bandwidth_is_the_overall_average_even_if_other_fields_are_inf(self):
        self.assertEqual(parsers.parse_ucx_perftest(UCX_BW_AVG_INF, BW), (6.32, None))

    def test_ucx_non_finite_is_not_a_number(self):
        value, why = parsers.parse_ucx_perftest(UCX_ALL_INF, BW)
        self.assertIsNone(value)
        self.assertIn("non-finite", why)

    def test_ucx_no_result_line(self):
        value, why = parsers.parse_ucx_perftest(UCX_FAILED, LAT)
        self.assertIsNone(value)
        self.assertIn("no result line", why)

    def test_perftest_latency_is_t_typical(self):
        self.assertEqual(parsers.parse_perftest(PT_LAT, LAT, 8), (9.4, None))

    def test_perftest_bandwidth_is_bw_average(self):
        self.assertEqual(parsers.parse_perftest(PT_BW, BW, 65536), (9.77, None))

    def test_perftest_size_must_match(self):
        self.assertIsNone(parsers.parse_perftest(PT_BW, BW, 1048576)[0])

    def test_perftest_clock_calibration_failure_is_named(self):
        value, why = parsers.parse_perftest(PT_LAT_UNCALIBRATED, LAT, 8)
        self.assertIsNone(value)
        self.assertIn("calibrate", why)

    def test_error_line_is_the_reason(self):
        self.assertIn("no transport gdr_rc", launch.last_error_line(UCX_FAILED))

    def test_error_line_is_the_library_cause_not_the_launcher_help_text(self):
        self.assertEqual(launch.last_error_line(OMPI_EXITED_IMPROPERLY),
                         "ucp_ep.c:1405 UCX  ERROR error 'Endpoint timeout' will not be handled "
                         "for ep 0x7f since no error callback is installed")

# Open MPI 4.1's ending when a rank exits without MPI_Finalize (MPI_ERRORS_ARE_FATAL), abridged
OMPI_EXITED_IMPROPERLY = """\
==208== Callgrind, a call-graph generating cache profiler
[1765130000.123456] [node:208  :0]        ucp_ep.c:1405 UCX  ERROR error 'Endpoint timeout' \
will not be handled for ep 0x7f since no error callback is installed
[node:00208] *** An error occurred in MPI_Send
[node:00208] *** reported by process [1234,0]
[node:00208] *** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,
--------------------------------------------------------------------------
mpirun has exited due to process rank 0 with PID 0 on
node node exiting improperly. There are three reasons this could occur:
orte_create_session_dirs is set to false. In this case, the run-time cannot
detect that the abort call was an abnormal termination. Hence, the only
error message you will receive is this one.
--------------------------------------------------------------------------
"""


def row(section, test, size, metric, transport, value, reason=None):
    return dict(section=section, test=test, size=size, metric=metric, transport=transport,
                value=value, status="ok" if value is not None else "n/a", reason=reason)


class Comparison(unittest.TestCase):
    def test_ratios_and_raw_peers(self):
        rows = [row("uct", "put_bw", 65536, BW, "rc_verbs", 40.0),
                row("uct", "put_bw", 65536, BW, "gdr_rc", 50.0),
                row("uct", "put_lat", 8, LAT, "rc_verbs", 12.0),
                row("uct", "put_lat", 8, LAT, "gdr_rc", None, "GDR_PLUGIN not set"),
                row("raw", "ib_write_bw", 65536, BW, "verbs", 80.0),
                row("raw", "ib_write_lat", 8, LAT, "verbs", 10.0)]
        table = {(t["test"], t["size"]): t for t in tables.comparison_rows(rows)}
        bw = table[("put_bw", 65536)]
        self.assertAlmostEqual(bw["gdr_over_rc"]["median"], 1.25)
        self.assertAlmostEqual(bw["rc_over_raw"]["median"], 0.5)
        self.assertAlmostEqual(bw["gdr_over_raw"]["median"], 0.625)
        lat = table[("put_lat", 8)]
        self.assertAlmostEqual(lat["rc_over_raw"]["median"], 1.2)
        self.assertIsNone(lat["gdr_over_rc"])  # n/a stays n/a: no ratio is made up
        self.assertNotIn(("ib_write_bw", 65536), table)  # raw rows are peers, not comparison rows


class CostSection(unittest.TestCase):
    """callgrind output -> per-operation counts (testdata: rc_verbs put_short, 200 calls, the
    client of ucx_perftest -t put_lat -s 8 -D short -n 200 -w 0 under --toggle-collect)."""
    RXE = "/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so"
    OPS = f"post_send {RXE} 0x3cc0\npost_recv {RXE} 0x4a10\npoll_cq {RXE} 0x2f00\n"

    def profile(self):
        return callgrind.parse(captured("callgrind-rc_verbs-put_short.out"))

    def test_totals_are_self_costs_only(self):
        p = self.profile()
        self.assertEqual(p.total, 66400)  # the file's "summary:", calls' inclusive lines left out
        self.assertEqual(dict(callgrind.split_by_class(p)),
                         {"transport": 13400, "provider": 38800, "libc": 14200})

    def test_totals_of_a_profile(self):
        provider = cost.provider_functions(self.OPS)
        self.assertEqual(provider["post_send"], (self.RXE, "0x0000000000003cc0"))
        t = cost.totals(self.profile(), "uct_rc_verbs_ep_put_short", provider)
        self.assertEqual(t["ops"], 200)
        self.assertEqual(t["instr_per_op"], 66400)
        self.assertEqual(t["syscalls_per_op"], 200)  # rxe's doorbell: one write() per post
        self.assertEqual(t["post_send_per_op"], 200)
        self.assertEqual(t["post_recv_per_op"], 0)
        self.assertEqual(t["split_provider"], 38800)
        self.assertEqual(cost.totals(self.profile(), "gdr_ep_put_short", {})["ops"], 0)

    @staticmethod
    def call(instr, ops=1, post_send=1):
        return {"ops": ops, "instr_per_op": instr, "post_send_per_op": post_send}

    def test_per_operation_is_the_last_half_of_the_calls(self):
        # the dump before the first call, then one dump per call; the first calls pay one-time
        # work (a pool grows), and the edge into the op function lands a dump late at times
        dumps = [self.call(0, ops=0, post_send=0), self.call(1500), self.call(1400, ops=2),
                 self.call(332, ops=0), self.call(332), self.call(332), self.call(334)]
        calls, why = cost.calls_of_run(dumps, "op")
        self.assertIsNone(why)
        self.assertEqual(len(calls), 6)
        self.assertNotIn("ops", calls[0])
        per_op = cost.per_operation(calls)
        # the last half but the last call: the profile written at exit, which is not the call's
        self.assertAlmostEqual(per_op["instr_per_op"], 332)
        self.assertEqual(per_op["post_send_per_op"], 1)
        self.assertEqual(calls[0]["instr_per_op"], 1500)  # FIRST_CALL rows take this one

    def test_dumps_that_do_not_match_the_calls_are_no_row(self):
        self.assertIn("no call", cost.calls_of_run([self.call(0, ops=0)], "op")[1])
        _, why = cost.calls_of_run([self.call(0, ops=0), self.call(5, ops=2)], "op")
        self.assertIn("1 dumps, 2 calls", why)
        _, why = cost.calls_of_run([self.call(7, ops=0), self.call(5)], "op")
        self.assertIn("7 instructions before the first", why)
        self.assertIsNone(cost.per_operation([]))

    def test_callgrind_options_follow_callgrind_3_19s_prefix_tree(self):
        # what callgrind 3.19 did with each command line (host, ucx_perftest -b over tcp,
        # 2026-12-05): a second option on a name after a name sharing its prefix hides the first
        short, bcopy = "uct_tcp_ep_am_short", "uct_tcp_ep_am_bcopy"
        t, d = (lambda f: "--toggle-collect=" + f), (lambda f: "--dump-before=" + f)
        opts = callgrind.function_options
        both = {"toggle-collect": True, "dump-before": True}
        argv = [t(short), d(short), t(bcopy), d(bcopy)]  # am_bcopy: 0 instructions collected
        self.assertEqual((opts(argv, short), opts(argv, bcopy)), (both, {"dump-before": True}))
        argv = [t(bcopy), t(short), d(short), d(bcopy)]  # nothing collected at all
        self.assertEqual((opts(argv, short), opts(argv, bcopy)),
                         ({"dump-before": True}, {"dump-before": True}))
        argv = [t(short), t(bcopy), d("?" + short[1:]), d("?" + bcopy[1:])]  # both, as wanted
        self.assertEqual((opts(argv, short), opts(argv, bcopy)), (both, both))
        self.assertEqual(opts([t("*MPI_Send")], "PMPI_Send"), {"toggle-collect": True})
        self.assertEqual(opts([t("*MPI_Send")], "PMPI_Recv"), {})

    def test_every_row_gets_exactly_its_callgrind_options(self):
        # recv_ucp_tag_*: toggle and dump on ucp_tag_recv_nbx after ucp_tag_send_nbx shared
        # "ucp_" with it left the toggle unreachable (0 instructions on every receive call)
        wanted = [("toggle-collect", "ucp_worker_progress"), ("dump-before", "ucp_worker_progress"),
                  ("dump-before", "ucp_tag_send_nbx"), ("toggle-collect", self.RECV),
                  ("dump-before", self.RECV)]
        argv, why = cost.callgrind_window(wanted)
        self.assertIsNone(why)
        self.assertEqual(argv[-1], "--dump-before=?cp_tag_recv_nbx")
        self.assertEqual(callgrind.function_options(argv, self.RECV),
                         {"toggle-collect": True, "dump-before": True})
        naive = [f"--{o}={f}" for o, f in wanted]
        self.assertEqual(callgrind.function_options(naive, self.RECV), {"dump-before": True})
        for r in cost.COST_ROWS:  # each op function of one batch, as measure_batch asks
            for group in cost.batch_groups([r]):
                self.assertEqual(len(group), 1)
        fns = [r.functions["rc_verbs"] for r in cost.batch_groups(cost.COST_ROWS)[0]]
        argv, why = cost.callgrind_window([("toggle-collect", f) for f in fns] +
                                          [("dump-before", f) for f in fns])
        self.assertIsNone(why)
        self.assertTrue(all(callgrind.function_options(argv, f) ==
                            {"toggle-collect": True, "dump-before": True} for f in fns))

    def test_the_demos_rows_share_one_process_per_transport(self):
        groups = cost.batch_groups(cost.selected_rows(["put_short", "am_short", "put_bcopy",
                                                       "am_bcopy"]))
        self.assertEqual([[r.name for r in g] for g in groups],
                         [["put_short", "am_short", "put_bcopy", "am_bcopy"]])
        groups = cost.batch_groups(cost.selected_rows(["am_bcopy", "am_zcopy", "ep_flush",
                                                       "put_short"]))
        # am_zcopy's 64 KiB segments are another environment; ep_flush takes a first call
        self.assertEqual([[r.name for r in g] for g in groups],
                         [["put_short", "am_bcopy"], ["am_zcopy"], ["ep_flush"]])

    def test_a_batchs_dumps_are_split_by_the_call_before_them(self):
        a, b = "uct_rc_verbs_ep_put_short", "uct_rc_verbs_ep_am_short"
        trig = (lambda f: f"--dump-before={f}")
        dumps = [(trig(a), self.call(0, 0), {a: 0, b: 0}), (trig(a), self.call(332), {a: 1, b: 0}),
                 (trig(a), self.call(332), {a: 1, b: 0}),
                 (trig(b), self.call(334), {a: 1, b: 0}),  # a test's first dump: a's last call
                 (trig(b), self.call(382), {a: 0, b: 1}),
                 ("Program termination", self.call(383), {a: 0, b: 1})]
        calls, why = cost.batch_calls(dumps, [a, b])
        self.assertIsNone(why)
        self.assertEqual([c["instr_per_op"] for c in calls[a]], [332, 332, 334])
        self.assertEqual([c["instr_per_op"] for c in calls[b]], [382, 383])
        dumps[2] = (trig(a), self.call(332), {a: 2, b: 0})
        self.assertIn("3 dumps, 4 calls", cost.batch_calls(dumps, [a, b])[1])
        self.assertIn("before the first", cost.batch_calls([(trig(a), self.call(5), {a: 0})] +
                                                           dumps[1:], [a, b])[1])
        self.assertIn("not before an op function",
                      cost.batch_calls(dumps[:2] + [("--dump-before=x", self.call(1), {a: 0})] +
                                      dumps[2:3], [a])[1])

    PROGRESS, MARK, RECV = "0x0000000000032490", "uct_rc_verbs_ep_am_short", "ucp_tag_recv_nbx"

    def progress_dumps(self, *events):
        """(trigger, totals) per dump of a run whose events are ("p", instructions, post_recv[,
        poll_cq: default 2]), a progress call, ("r", ...) a receive call, or "m", an operation:
        a dump before each event and one at exit, each holding what ran since the previous one
        (the event before it); the calls of the progress function are counted where its work
        is."""
        fn = {"m": self.MARK, "p": self.PROGRESS, "r": self.RECV}
        triggers = [f"--dump-before={fn[e[0]]}" for e in events]
        held = [None] + list(events)
        def counts(e):  # a call over 50 instructions found something: a CQE's 25 more
            if e in (None, "m"):
                return {"instr_per_op": 0, "post_recv_per_op": 0, "poll_cq_per_op": 0}
            polls = e[3] if len(e) > 3 else 2
            return {"instr_per_op": e[1], "post_recv_per_op": e[2], "poll_cq_per_op": polls,
                    "split_provider": polls * 10 + (25 if e[1] > 50 else 0)}
        return [(t, dict(counts(e), ops=int(e is not None and e[0] == "p")))
                for t, e in zip(triggers + ["Program termination"], held)]

    def test_trigger_of_a_dump(self):
        self.assertEqual(cost.dump_trigger("version: 1\ndesc: Trigger: Program termination\n"),
                         "Program termination")
        self.assertEqual(cost.dump_trigger("events: Ir\n"), "")

    def test_receiver_is_the_calls_that_found_something(self):
        # 4 operations; idle polls of both CQs cost 50, of one (nothing in flight) 40, their
        # provider work 10 a poll; a receive costs 350 and posts a receive every other time; the
        # first operations' one-time work is left out (last half only)
        dumps = self.progress_dumps(("p", 9000, 1), "m", ("p", 50, 0), ("p", 350, 1), "m",
                                    ("p", 50, 0), ("p", 40, 0, 1), ("p", 50, 0),
                                    ("p", 350, 0, 1), "m", ("p", 50, 0), ("p", 350, 1), "m",
                                    ("p", 50, 0))
        calls, ops, why = cost.progress_calls(dumps, self.PROGRESS, self.MARK)
        self.assertIsNone(why)
        self.assertEqual(ops, 4)
        self.assertEqual([b for b, _, _ in calls], [0, 1, 1, 2, 2, 2, 2, 3, 3, 4])
        per_op, idle = cost.receiver_per_operation(calls, ops)
        self.assertEqual(idle, (10, 5, 7))  # 5 of the 7 calls after 2 operations found nothing
        self.assertEqual(per_op["instr_per_op"], (350 + 350) / 2)  # whatever the spins between
        self.assertEqual(per_op["post_recv_per_op"], 0.5)
        self.assertEqual(per_op["poll_cq_per_op"], 1.5)  # one stopped after the receive CQ
        # a slower peer, more empty spins between the same calls: the same row
        slower = self.progress_dumps(("p", 9000, 1), "m", ("p", 350, 1), "m", ("p", 50, 0),
                                     ("p", 40, 0, 1), ("p", 50, 0), ("p", 350, 0, 1), "m",
                                     ("p", 350, 1), "m", ("p", 50, 0), ("p", 50, 0))
        calls, ops, _ = cost.progress_calls(slower, self.PROGRESS, self.MARK)
        self.assertEqual(cost.receiver_per_operation(calls, ops)[0]["instr_per_op"], 350)
        # iface_progress: the cheapest call of all
        self.assertEqual(cost.idle_call([c for _, _, c in calls])[0]["instr_per_op"], 40)

    def test_a_receive_call_outside_progress_counts_whole(self):
        # UCP: ucp_tag_recv_nbx matches what progress queued; it is not an idle poll
        dumps = self.progress_dumps("m", ("p", 50, 0), ("p", 350, 0), ("r", 120, 0), "m",
                                    ("p", 50, 0), ("p", 350, 1), ("r", 120, 0), "m")
        calls, ops, why = cost.progress_calls(dumps, self.PROGRESS, self.MARK, self.RECV)
        self.assertIsNone(why)
        self.assertEqual(ops, 3)
        per_op, idle = cost.receiver_per_operation(calls, ops)
        self.assertEqual(idle, (10, 2, 6))  # the calls after the first of the 3 operations
        self.assertEqual(per_op["instr_per_op"], 350 + 120)
        # without the receive function its dumps are an error, not work lost
        self.assertIn("after a call of", cost.progress_calls(dumps, self.PROGRESS, self.MARK)[2])

    def test_progress_dumps_that_do_not_add_up_are_no_row(self):
        dumps = self.progress_dumps(("p", 50, 0), "m")
        dumps[1][1]["ops"] = 2  # a call of the progress function that no dump holds
        self.assertIn("do not match", cost.progress_calls(dumps, self.PROGRESS, self.MARK)[2])
        dumps = self.progress_dumps("m", ("p", 50, 0))
        dumps[1][1]["instr_per_op"] = 7  # collected outside progress
        self.assertIn("after a call of", cost.progress_calls(dumps, self.PROGRESS, self.MARK)[2])

    def test_agreement_names_the_rows_over_one_percent(self):
        import subprocess
        tool = os.path.join(os.path.dirname(os.path.dirname(HERE)), "perf", "cost", "agreement")
        base = [row("cost", "put_short", 8, "instr_per_op", "rc_verbs", 332.0),
                row("cost", "put_short", 8, "instr_per_op", "gdr_rc", 322.12),
                row("cost", "am_short", 8, "instr_per_op", "gdr_rc", 307.12),
                row("uct", "put_lat", 8, LAT, "gdr_rc", 2.0)]

        def agree(rows_b, rows_a=base):
            with tempfile.TemporaryDirectory() as d:
                paths = []
                for name, rows in (("a", rows_a), ("b", rows_b)):
                    paths.append(os.path.join(d, name + ".json"))
                    with open(paths[-1], "w") as f:
                        json.dump({"rows": rows}, f)
                p = subprocess.run([sys.executable, tool] + paths, capture_output=True, text=True)
                return p.returncode, p.stderr

        changed = [dict(r) for r in base]
        changed[3]["value"] = 9.0  # not a cost row: not compared
        changed[1]["value"] = 322.12 * 1.009
        self.assertEqual(agree(changed), (0, ""))
        changed[2]["value"] = 307.12 * 1.02
        rc, err = agree(changed)
        self.assertEqual(rc, 1)
        self.assertIn("FAIL am_short gdr_rc instr_per_op", err)
        self.assertNotIn("put_short", err)
        rc, err = agree(base[:2])  # a row in one run only
        self.assertIn("FAIL am_short gdr_rc instr_per_op: in one run only", err)
        na = [dict(r) for r in base]
        na[0]["value"] = None
        self.assertIn("FAIL put_short rc_verbs instr_per_op: n/a", agree(na, na)[1])
        self.assertEqual(agree(base[3:])[0], 1)  # no cost rows: nothing agreed

    def test_dump_files_in_order_with_the_final_one_last(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "callgrind.out")
            for suffix in ("", ".1", ".2", ".10", ".tmp"):
                open(out + suffix, "w").close()
            self.assertEqual([os.path.basename(f) for f in cost.dump_files(out)],
                             ["callgrind.out.1", "callgrind.out.2", "callgrind.out.10",
                              "callgrind.out"])

    def test_object_classes(self):
        for path, cls in (("/usr/lib/x86_64-linux-gnu/ucx/libuct_ib.so.0.0.0", "transport"),
                          ("/b/lib/ucx-gdr/libuct_gdr_impl.so", "transport"),
                          ("/usr/lib/x86_64-linux-gnu/libucs.so.0", "ucx_core"),
                          ("/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14", "provider"),
                          ("/usr/lib/x86_64-linux-gnu/libc.so.6", "libc"),
                          ("/usr/bin/ucx_perftest", "other")):
            self.assertEqual(callgrind.object_class(path), cls, path)

    def test_mpi_objects_are_the_mpi_class(self):
        for path in ("/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4",
                     "/usr/lib/x86_64-linux-gnu/libopen-pal.so.40.30.2",
                     "/usr/lib/x86_64-linux-gnu/libmca_common_ucx.so.40.30.2",
                     "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ucx.so",
                     "/usr/lib/x86_64-linux-gnu/libmpich.so.12.2.2"):
            self.assertEqual(callgrind.object_class(path), "mpi", path)
        self.assertEqual(callgrind.object_class("/usr/lib/x86_64-linux-gnu/libucp.so.0"),
                         "ucx_core")

    @staticmethod
    def op(instr, spins=0, through=1):
        return {"instr_per_op": instr, "spins": spins, "expect": through, "post_send_per_op": 1}

    def test_program_segments_pair_each_trigger_with_what_follows(self):
        # a dump before each call (the first holds what ran before it: nothing collected)
        dumps = [("--dump-before=PMPI_Send", self.op(0)), ("--dump-before=PMPI_Send", self.op(0)),
                 ("--dump-before=PMPI_Send", self.op(900)),
                 ("--dump-before=PMPI_Send", self.op(424)),
                 ("Program termination", self.op(430))]
        segments, why = cost.program_segments(dumps)
        self.assertIsNone(why)
        # each call is the dump after its trigger; the profile at exit is left out
        self.assertEqual([(fn, c["instr_per_op"]) for fn, c in segments],
                         [("PMPI_Send", 0), ("PMPI_Send", 900), ("PMPI_Send", 424)])
        _, why = cost.program_segments([("--dump-before=PMPI_Send", self.op(5))] + dumps[1:])
        self.assertIn("before the first dump", why)
        self.assertIn("1 calls", cost.program_segments(dumps[:2])[1])

    def test_program_row_is_the_sum_of_the_ranks_fewest_spins_of_the_last_half(self):
        send = [("PMPI_Send", self.op(i)) for i in (5000, 4000, 424, 424)]
        # rank 1's receives: the first half pays the wire-up; of the rest, the two that spun
        # (their message had not arrived) are left out; one refilled a queue (+1800: kept)
        recv = [("PMPI_Recv", self.op(i, spins=k)) for i, k in
                ((9000, 1), (9000, 1), (9000, 1), (9000, 1), (1090, 1), (1614, 3),
                 (1090 + 1800, 1), (3710, 11))]
        per_op, why = cost.program_per_operation({0: send, 1: recv}, {0: "send", 1: "recv"},
                                                 cost.MPI_SENDRECV_UCP)
        self.assertIsNone(why)
        self.assertAlmostEqual(per_op["instr_per_op"], 424 + 1090 + 1800 / 2)
        self.assertAlmostEqual(per_op["post_send_per_op"], 2)
        self.assertNotIn("spins", per_op)
        self.assertEqual(per_op[cost.PART_PREFIX + "parts"]["recv"],
                         {"instr": 1990, "spins": 1, "kept": 2, "typical": 1090,
                          "operations": 4})

    def test_program_operation_not_through_ucp_is_no_row(self):
        send = [("PMPI_Send", self.op(300, through=0))] * 4
        per_op, why = cost.program_per_operation({0: send}, {0: "send"}, cost.MPI_SENDRECV_UCP)
        self.assertIsNone(per_op)
        self.assertIn("2 of 2 send operations made no call of ucp_tag_send_n.*: not through UCP",
                      why)

    def test_program_command_lines(self):
        s = types.SimpleNamespace(provider_ops="/b/perf/cost/provider_ops")
        rows = {r.name: r for r in cost.COST_ROWS}
        env = {"UCX_TLS": "gdr_rc,ud_verbs:aux", "UCX_NET_DEVICES": "rxe0:1",
               "LD_PRELOAD": "/b/lib/libuct_gdr.so", "LD_BIND_NOW": "1", "PATH": "/bin"}

        def grind(rank):
            return ["vg", str(rank)]
        cmd, e = cost.program_command(s, rows["ucp_put_flush"], "gdr_rc", grind, env)
        self.assertEqual(cmd, ["vg", "0", "/b/perf/cost/ucp_put_flush"])
        self.assertEqual(e, env)
        # Open MPI: one app context of two ranks (Debian 13's mpirun segfaults on `A : B`); the
        # plugin reaches the ranks with -x, not mpirun, and is preloaded by the rank's exec only
        cmd, e = cost.program_command(s, rows["mpi_ompi_put_flush"], "gdr_rc", grind, env)
        self.assertNotIn("LD_PRELOAD", e)
        self.assertNotIn(":", cmd)
        self.assertEqual(cmd[cmd.index("pml") + 1], "ucx")
        self.assertEqual(cmd[cmd.index("-np") + 1], "2")
        self.assertIn("GDR_COST_PRELOAD=/b/lib/libuct_gdr.so", cmd)
        self.assertNotIn("LD_PRELOAD=/b/lib/libuct_gdr.so", cmd)
        self.assertEqual(cmd[-3:-1], ["sh", "-c"])
        # the ranks' shell picks each one's command line: run it as each rank would
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "perf", "cost"))
            prog = os.path.join(d, "perf", "cost", "mpi_cost")
            with open(prog, "w") as f:
                f.write('#!/bin/sh\necho "grind=${GRIND:-none} preload=$LD_PRELOAD args=$*"\n')
            os.chmod(prog, 0o755)
            here = types.SimpleNamespace(provider_ops=os.path.join(d, "perf", "cost", "x"))
            for name, arg, want in (("mpi_ompi_put_flush", "put", ("grind=0", "grind=none")),
                                    ("mpi_ompi_sendrecv", "sendrecv", ("grind=0", "grind=1"))):
                cmd, _ = cost.program_command(here, rows[name], "gdr_rc",
                                              lambda rank: ["env", f"GRIND={rank}"], env)
                for rank in (0, 1, 2):
                    ran = subprocess.run(cmd[-3:], capture_output=True, text=True,
                                         env={"PATH": os.environ["PATH"],
                                              "OMPI_COMM_WORLD_RANK": str(rank),
                                              "GDR_COST_PRELOAD": "/none.so"})
                    if rank == 2:   # a rank without a command line fails, it does not run
                        self.assertEqual(ran.returncode, 2, ran)
                        continue
                    self.assertEqual(ran.stdout.strip(),
                                     f"{want[rank]} preload=/none.so args={arg}", (name, rank, ran))
        # MPICH: every peer remote (else ch4's shared memory carries the messages), both ranks
        cmd, e = cost.program_command(s, rows["mpi_mpich_sendrecv"], "gdr_rc", grind, env)
        self.assertEqual(e["MPIR_CVAR_NOLOCAL"], "1")
        self.assertNotIn("LD_PRELOAD", e)
        self.assertEqual(" ".join(cmd), "mpiexec.mpich -genv LD_PRELOAD /b/lib/libuct_gdr.so "
                         "-n 1 vg 0 /b/perf/cost/mpi_cost_mpich sendrecv : "
                         "-n 1 vg 1 /b/perf/cost/mpi_cost_mpich sendrecv")

    def test_cost_rows_get_a_ratio_per_metric(self):
        rows = [row("cost", "put_short", 8, "instr_per_op", "rc_verbs", 332.0),
                row("cost", "put_short", 8, "instr_per_op", "gdr_rc", 343.0),
                row("cost", "put_short", 8, "syscalls_per_op", "rc_verbs", 1.0),
                row("cost", "put_short", 8, "syscalls_per_op", "gdr_rc", 1.0)]
        table = {t["metric"]: t for t in tables.comparison_rows(rows)}
        self.assertAlmostEqual(table["instr_per_op"]["gdr_over_rc"]["median"], 343 / 332)
        self.assertAlmostEqual(table["syscalls_per_op"]["gdr_over_rc"]["median"], 1.0)


    def test_perftest_arguments_per_api(self):
        rows = {r.name: r for r in cost.COST_ROWS}
        self.assertEqual(cost.perftest_args(rows["get_bcopy"], "gdr_rc", 1024),
                         ["-t", "get", "-s", "1024", "-x", "gdr_rc", "-D", "bcopy", "-O", "1",
                          "-w", "0"])
        self.assertEqual(cost.perftest_args(rows["fetch_add64"], "rc_verbs", 8),
                         ["-t", "fadd", "-s", "8", "-x", "rc_verbs", "-O", "1", "-w", "0"])
        # UCP: UCX_TLS picks the transport, no -x
        self.assertEqual(cost.perftest_args(rows["ucp_tag_rndv"], "gdr_rc", MiB),
                         ["-t", "tag_lat", "-s", str(MiB), "-w", "0"])
        self.assertEqual([r.name for r in cost.selected_rows(["am_short", "put_short"])],
                         ["put_short", "am_short"])  # the table's order, not the caller's

    def test_regression_fails_on_a_dearer_or_unmeasured_row(self):
        rows = [row("cost", "put_short", 8, "instr_per_op", "rc_verbs", 332.0),
                row("cost", "put_short", 8, "instr_per_op", "gdr_rc", 343.12),
                row("cost", "am_short", 8, "instr_per_op", "rc_verbs", 382.0),
                row("cost", "am_short", 8, "instr_per_op", "gdr_rc", 339.12),
                row("cost", "put_bcopy", 1024, "instr_per_op", "rc_verbs", 524.0),
                row("cost", "put_bcopy", 1024, "instr_per_op", "gdr_rc", 524.0),
                row("cost", "am_bcopy", 1024, "instr_per_op", "rc_verbs", 534.88),
                row("cost", "am_bcopy", 1024, "instr_per_op", "gdr_rc", None, "timed out"),
                row("cost", "am_short", 8, "syscalls_per_op", "gdr_rc", 9.0)]
        bad = cost.regressions(rows, ["put_short", "am_short", "put_bcopy", "am_bcopy",
                                      "put_zcopy"])
        self.assertEqual([b[0] for b in bad], ["put_short", "am_bcopy", "put_zcopy"])
        self.assertIn("1.033x", bad[0][3])
        self.assertIn("gdr_rc: timed out", bad[1][3])  # equal is no regression, n/a is
        self.assertIn("no row", bad[2][3])
        self.assertEqual(cost.regressions(rows, ["am_short", "put_bcopy"]), [])

    def test_cost_plot_has_the_ratio_under_each_row(self):
        from gdr_compare import plots
        plt = plots.pyplot()
        if plt is None:
            self.skipTest("no matplotlib")
        rows = [row("cost", "put_short", 8, "instr_per_op", "rc_verbs", 332.0),
                row("cost", "put_short", 8, "instr_per_op", "gdr_rc", 343.12)]
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(plots.cost_plot(plt, d, tables.comparison_rows(rows)), ["cost.png"])
            self.assertGreater(os.path.getsize(os.path.join(d, "cost.png")), 1000)


class ToolParsers(unittest.TestCase):
    """gdr_perftest and coll_bench: the numbers that are compared, and their units."""

    def test_gdr_perftest_latency_is_the_median_half_round_trip(self):
        parsed = parsers.parse_gdr_perftest(GP_TAG_LAT)
        self.assertEqual(parsers.gdr_perftest_value(parsed, "tag_lat", 8, LAT), (2045.58, None))

    def test_gdr_perftest_bandwidth_is_in_mib_per_second(self):
        parsed = parsers.parse_gdr_perftest(GP_PUT_BW)
        value, why = parsers.gdr_perftest_value(parsed, "put_bw", MiB, BW)
        self.assertIsNone(why)
        # 1 MiB per 100086.70 us = 9.991 MiB/s (2^20), not the 10.48 "MB/s" of 10^6 bytes
        self.assertAlmostEqual(value, 1e6 / 100086.70, places=6)
        # the same elapsed time as the printed GB/s (10^9 B/s), within its 4 decimals
        self.assertAlmostEqual(value, 0.0105 * 1e9 / MiB, delta=0.05e-3 * 1e9 / MiB)

    def test_gdr_perftest_collective_time_per_call(self):
        parsed = parsers.parse_gdr_perftest(GP_COLL)
        self.assertEqual(sorted(parsed), ["allgather", "alltoall"])
        self.assertEqual(parsers.gdr_perftest_value(parsed, "allgather", 65536, TIME),
                         (2249.24, None))
        self.assertEqual(parsers.gdr_perftest_value(parsed, "alltoall", 16, TIME), (108.87, None))

    def test_gdr_perftest_failed_check_is_na(self):
        parsed = parsers.parse_gdr_perftest(GP_COLL)
        value, why = parsers.gdr_perftest_value(parsed, "alltoall", 4096, TIME)
        self.assertIsNone(value)
        self.assertIn("verification WRONG", why)

    def test_gdr_perftest_missing_size_or_test_is_na(self):
        parsed = parsers.parse_gdr_perftest(GP_COLL)
        self.assertIn("no alltoall result line for size 65536",
                      parsers.gdr_perftest_value(parsed, "alltoall", 65536, TIME)[1])
        self.assertIsNone(parsers.gdr_perftest_value(parsed, "bcast", 16, TIME)[0])
        self.assertEqual(parsers.parse_gdr_perftest(UCX_FAILED), {})

    def test_coll_bench_rows(self):
        op, ranks, rows = parsers.parse_coll_bench(CB_ALLTOALL)
        self.assertEqual((op, ranks), ("alltoall", 2))
        self.assertEqual(sorted(rows), [8, 32, 2048, 32768])
        self.assertEqual(parsers.coll_bench_value(rows, 8, "mpi_us"), (2116.41, None))
        self.assertEqual(parsers.coll_bench_value(rows, 8, "ours_us"), (424.06, None))

    def test_coll_bench_check_applies_to_ours_only(self):
        _, _, rows = parsers.parse_coll_bench(CB_ALLTOALL)
        self.assertEqual(parsers.coll_bench_value(rows, 2048, "mpi_us"), (1470.46, None))
        value, why = parsers.coll_bench_value(rows, 2048, "ours_us")
        self.assertIsNone(value)
        self.assertIn("WRONG", why)
        self.assertIn("no result line", parsers.coll_bench_value(rows, 128, "mpi_us")[1])

    def test_sizes_follow_nccl_tests(self):
        # coll_bench's per-rank block -> gdr_perftest's -s: x ranks for the gathering collectives
        self.assertEqual(plan.coll_size("allgather", 8, 2), 16)
        self.assertEqual(plan.coll_size("alltoall", 2048, 4), 8192)
        self.assertEqual(plan.coll_size("reduce_scatter", 8, 4), 32)
        self.assertEqual(plan.coll_size("allreduce", 8, 4), 8)
        self.assertEqual(plan.coll_size("bcast", 32768, 2), 32768)

    def test_busbw_matches_the_tools_own(self):
        # gdr_perftest printed busbw 0.0146 for allgather 65536 B in 2249.24 us on 2 ranks
        self.assertAlmostEqual(plan.busbw("allgather", 65536, 2, 2249.24), 0.0146, delta=0.00005)
        # coll_bench alltoall 32768 B per peer, 2 ranks, 8182.71 us: printed 0.004
        size = plan.coll_size("alltoall", 32768, 2)
        self.assertAlmostEqual(plan.busbw("alltoall", size, 2, 8182.71), 0.004, delta=0.0005)
        self.assertAlmostEqual(plan.bus_factor("allreduce", 4), 1.5)
        self.assertAlmostEqual(plan.bus_factor("bcast", 4), 1.0)
        self.assertIsNone(plan.busbw("bcast", 8, 2, None))


def trow(section, test, size, metric, transport, value, tool, ranks=2, reason=None):
    r = row(section, test, size, metric, transport, value, reason)
    r.update(tool=tool, ranks=ranks)
    return r


class SectionTables(unittest.TestCase):
    def test_wrapper_ratio_is_wrapper_over_ucx_perftest(self):
        def wrapper(test, size, metric, transport, value, tool, reason=None):
            return trow("wrapper", test, size, metric, transport, value, tool, reason=reason)
        rows = [wrapper("tag_lat", 8, LAT, "gdr_rc", 30.0, "gdr_perftest"),
                wrapper("tag_lat", 8, LAT, "gdr_rc", 40.0, "ucx_perftest"),
                wrapper("put_bw", MiB, BW, "gdr_rc", 12.0, "gdr_perftest"),
                wrapper("put_bw", MiB, BW, "gdr_rc", 10.0, "ucx_perftest"),
                wrapper("put_bw", MiB, BW, "rc_verbs", None, "gdr_perftest", "not built"),
                wrapper("put_bw", MiB, BW, "rc_verbs", 10.0, "ucx_perftest")]
        table = {(t["test"], t["transport"]): t for t in tables.wrapper_rows(rows)}
        self.assertEqual(len(table), 3)
        self.assertAlmostEqual(table[("tag_lat", "gdr_rc")]["wrapper_over_ucx"]["median"], 0.75)
        self.assertAlmostEqual(table[("put_bw", "gdr_rc")]["wrapper_over_ucx"]["median"], 1.2)
        self.assertEqual(table[("put_bw", "gdr_rc")]["ucx_test"], "ucp_put_bw")
        self.assertIsNone(table[("put_bw", "rc_verbs")]["wrapper_over_ucx"])
        self.assertEqual(tables.comparison_rows(rows), [])  # not in the transport table

    def test_coll_ratios_per_ranks_and_size(self):
        rows = []
        for ranks, ours, mpi, cb in ((2, 100.0, 200.0, 150.0), (4, 300.0, 200.0, None)):
            size = plan.coll_size("allgather", 8, ranks)

            def coll(metric, value, tool, reason=None):
                return trow("coll", "allgather", size, metric, "gdr_rc", value, tool, ranks,
                            reason)
            rows += [coll(TIME, ours, "gdr_perftest"),
                     coll(BUSBW, plan.busbw("allgather", size, ranks, ours), "gdr_perftest"),
                     coll(TIME, mpi, "mpi"),
                     coll(BUSBW, plan.busbw("allgather", size, ranks, mpi), "mpi"),
                     coll(TIME, cb, "coll_bench", None if cb else "timed out")]
        table = {t["ranks"]: t for t in tables.coll_rows(rows)}
        self.assertEqual(sorted(table), [2, 4])
        self.assertAlmostEqual(table[2]["time_ratio"]["median"], 0.5)  # ours twice as fast
        self.assertAlmostEqual(table[2]["busbw_ratio"]["median"], 2.0)
        self.assertAlmostEqual(table[2]["coll_bench_over_mpi"]["median"], 0.75)
        self.assertEqual((table[4]["size"], table[4]["block"]), (32, 8))
        self.assertAlmostEqual(table[4]["time_ratio"]["median"], 1.5)
        self.assertIsNone(table[4]["coll_bench_over_mpi"])
        self.assertEqual(tables.comparison_rows(rows), [])

    def test_report_prints_the_section_tables(self):
        rows = [trow("wrapper", "tag_lat", 8, LAT, "gdr_rc", 30.0, "gdr_perftest"),
                trow("wrapper", "tag_lat", 8, LAT, "gdr_rc", None, "ucx_perftest", reason="boom")]
        meta = dict(device="rxe0:1", gid_index=1, ucx_version="1.13.1", kernel="k",
                    in_rxe_vm=True)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            report.print_report(dict(meta=meta, rows=rows))
        self.assertIn("wrapper/ucx", out.getvalue())
        self.assertIn("n/a [1]", out.getvalue())
        self.assertIn("[1] boom", out.getvalue())
        self.assertNotIn("rc_verbs  gdr_rc", out.getvalue())  # no empty transport table


def doctor_port(port, link_layer, gid_index, reason="the rule"):
    """A port as `gdr-doctor --json` describes it (the fields compare reads)."""
    return dict(port=port, state="ACTIVE", link_layer=link_layer,
                gid_selection=dict(index=gid_index, reason=reason, override=None))


REPORT = dict(rdma_devices=[
    dict(name="mlx5_0", ports=[doctor_port(1, "InfiniBand", 0)]),
    dict(name="rxe0", ports=[doctor_port(1, "Ethernet", 1),
                             doctor_port(2, "Ethernet", None, "no IP address")])])


class Devices(unittest.TestCase):
    """The port and GID come from gdr-doctor's report: compare has no GID rule of its own."""

    def test_first_device_port_one_by_default(self):
        port = devices.choose_port(REPORT)
        self.assertEqual((port.device, port.port, port.gid_index), ("mlx5_0", 1, 0))
        self.assertIsNone(port.perftest_gid)  # InfiniBand: perftest addresses by LID

    def test_named_device_and_port_or_rxe_dev(self):
        port = devices.choose_port(REPORT, "rxe0:1", default_device="mlx5_0")
        self.assertEqual((port.device, port.port, port.gid_index, port.perftest_gid),
                         ("rxe0", 1, 1, 1))
        self.assertEqual(devices.choose_port(REPORT, default_device="rxe0").device, "rxe0")
        port = devices.choose_port(REPORT, "rxe0:2")
        self.assertEqual((port.gid_index, port.gid_reason), (None, "no IP address"))

    def test_unknown_device_or_port_is_an_error_naming_what_exists(self):
        with self.assertRaisesRegex(devices.DeviceError, r"no RDMA device mlx5_9 \(have: mlx5_0 "
                                                         r"rxe0\)"):
            devices.choose_port(REPORT, "mlx5_9")
        with self.assertRaisesRegex(devices.DeviceError, r"no port 3 on rxe0 \(ports: 1 2\)"):
            devices.choose_port(REPORT, "rxe0:3")

    def fake_doctor(self, script):
        path = os.path.join(tempfile.mkdtemp(), "gdr-doctor")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + script + "\n")
        os.chmod(path, 0o755)
        return path

    def test_doctor_failure_is_a_device_error(self):
        broken = self.fake_doctor("echo 'gdr-doctor: unknown option' >&2; exit 3")
        with self.assertRaisesRegex(devices.DeviceError, "exit status 3: gdr-doctor: unknown"):
            devices.doctor_report(broken)
        silent = self.fake_doctor("exit 2")
        with self.assertRaisesRegex(devices.DeviceError, "no JSON report"):
            devices.doctor_report(silent)

    def test_not_ready_for_gpudirect_is_still_a_report(self):
        # exit status 2 ("not ready": no GPU, no peermem) says nothing about plain RDMA
        doctor = self.fake_doctor(f"echo '{json.dumps(REPORT)}'; exit 2")
        self.assertEqual(devices.device_names(devices.doctor_report(doctor)), ["mlx5_0", "rxe0"])


GDR_DOCTOR = os.environ.get("GDR_DOCTOR", "")


@unittest.skipUnless(os.access(GDR_DOCTOR, os.X_OK), "GDR_DOCTOR (the built gdr-doctor) not set")
class DoctorContract(unittest.TestCase):
    """The real doctor on the repository's sysfs fixtures: the fields compare reads exist and
    carry gdr_rc's rule (tests/fixtures/README.md describes the machines)."""

    def doctor_on(self, fixture):
        """doctor_report's own command line, run against a fixture tree (--root)."""
        path = os.path.join(tempfile.mkdtemp(), "gdr-doctor")
        with open(path, "w") as f:
            f.write(f'#!/bin/sh\nexec "{GDR_DOCTOR}" --root "{os.path.join(FIXTURES, fixture)}" '
                    '"$@"\n')
        os.chmod(path, 0o755)
        return path

    def test_roce_port_gets_the_ipv4_mapped_roce_v2_gid(self):
        port = devices.choose_port(devices.doctor_report(self.doctor_on("two_socket")))
        self.assertEqual((port.device, port.port, port.link_layer), ("mlx5_0", 1, "Ethernet"))
        self.assertEqual((port.gid_index, port.perftest_gid), (3, 3))
        self.assertIn("IPv4-mapped", port.gid_reason)

    def test_infiniband_port_gets_index_zero_and_perftest_no_gid(self):
        report = devices.doctor_report(self.doctor_on("dgx"))
        self.assertEqual(devices.device_names(report), ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"])
        port = devices.choose_port(report)
        self.assertEqual((port.device, port.gid_index, port.perftest_gid), ("mlx5_0", 0, None))
        self.assertEqual(devices.choose_port(report, "mlx5_2").perftest_gid, 3)

    def test_explicit_gid_index_is_judged_by_the_doctor(self):
        doctor = self.doctor_on("two_socket")
        port = devices.choose_port(devices.doctor_report(doctor, gid_index=0))
        self.assertEqual(port.gid_index, 0)
        self.assertIn("requested explicitly", port.gid_reason)
        port = devices.choose_port(devices.doctor_report(doctor, gid_index=99))
        self.assertIsNone(port.gid_index)
        self.assertIn("empty or out of range", port.gid_reason)

    def test_no_rdma_device(self):
        self.assertEqual(devices.device_names(devices.doctor_report(self.doctor_on("no_rdma"))), [])


class WrapperSection(unittest.TestCase):
    def test_gdr_perftest_runs_as_ucx_perftest_does(self):
        """No peer error handling, bandwidth timed by the sender until the flush: what
        ucx_perftest does, so that the ratio compares the wrapper, not two disciplines."""
        work = tempfile.mkdtemp()
        tool = os.path.join(work, "gdr_perftest")
        with open(tool, "w") as f:
            f.write("#!/bin/sh\n"
                    "echo '# gdr_perftest 0.1.0: tag_bw, 2 ranks (local (-N) on vm), memory host'\n"
                    "echo '  size  iters  avg_us  bw_GBps  msg_per_s  bytes_verified  check'\n"
                    "echo '  1048576  30  100000.00  0.0105  10  31457280  ok'\n")
        os.chmod(tool, 0o755)
        session = types.SimpleNamespace(ports=launch.PortAllocator(20000), gdr_perftest=tool,
                                        timeout=30, logdir=work)
        once = wrapper.gdr_p2p_once(session, "tag_bw", MiB, BW, dict(os.environ), 30, 3)
        value, why, _ = once("w")
        self.assertIsNone(why)
        self.assertAlmostEqual(value, 10.0)  # 1 MiB per 100 ms
        with open(os.path.join(work, "w.log")) as f:
            command = f.readline()
        self.assertIn("-t tag_bw -s 1048576 -n 30 -w 3", command)
        self.assertIn("--err-mode none --bw-timing sender", command)


class SectionsInterleave(unittest.TestCase):
    """Each comparing section runs its sides through Results.interleave: A B A B ..., with the
    ratios the tables print.  The launches are fakes that log their order."""

    def session(self, quick=True, sections=("uct",)):
        return types.SimpleNamespace(
            args=types.SimpleNamespace(quick=quick), iters=plan.Iterations(quick),
            net_device="rxe0:1", gdr_unavailable=None, sections=list(sections),
            results=Results(2, load=lambda: 1.0), base_env=lambda t: {},
            gdr_perftest_missing=None, coll_bench_missing=None, coll_ranks=[2],
            wanted=lambda test: True)

    def patch(self, module, **fakes):
        for name, fake in fakes.items():
            old = getattr(module, name)
            setattr(module, name, fake)
            self.addCleanup(setattr, module, name, old)

    def fake(self, order, tag, value=10.0):
        def once(log):
            order.append(f"{tag}:{log}")
            return value, None, 1.0
        return once

    def test_uct_alternates_transports_and_the_raw_peer(self):
        order, commands = [], []

        def ucx_once(s_, args, metric, env):
            commands.append(" ".join(args))
            return self.fake(order, args[-1])
        s = self.session(sections=("uct", "raw"))
        self.patch(ucx, missing_ucx_tools=lambda: None, ucx_once=ucx_once)
        self.patch(raw, raw_once=lambda s_, tool, size, metric: self.fake(order, tool),
                   shutil=types.SimpleNamespace(which=lambda t: "/usr/bin/" + t))
        with contextlib.redirect_stdout(io.StringIO()):
            ucx.run_uct(s)
            raw.run_raw(s)  # its rows were measured in the UCT pairs: nothing is run again
        put_lat = [o for o in order if "put_lat" in o or "ib_write_lat" in o]
        self.assertEqual(put_lat, ["rc_verbs:uct-rc_verbs-put_lat-8-r1",
                                   "gdr_rc:uct-gdr_rc-put_lat-8-r1",
                                   "ib_write_lat:raw-ib_write_lat-8-r1",
                                   "rc_verbs:uct-rc_verbs-put_lat-8-r2",
                                   "gdr_rc:uct-gdr_rc-put_lat-8-r2",
                                   "ib_write_lat:raw-ib_write_lat-8-r2"])
        labels = {(r["label"], r["of"]["test"], r["of"]["size"]) for r in s.results.ratios}
        self.assertIn(("gdr_rc/rc_verbs", "put_bw", 8), labels)  # the message rate
        self.assertIn(("rc_verbs/raw", "get", MiB), labels)
        self.assertNotIn(("rc_verbs/raw", "put_bw", 8), labels)  # no raw message rate
        self.assertEqual(len([r for r in s.results.rows if r["section"] == "raw"]),
                         len(plan.RAW_TESTS))
        for test in ("put_bw", "am_bw"):  # message rate: 8 B short, many outstanding
            self.assertIn(f"-d rxe0:1 -t {test} -s 8 -D short -n 2000 -w 200 -O 128 -x gdr_rc",
                          commands)

    def test_coll_interleaves_gdr_perftest_with_mpi(self):
        order = []
        s = self.session()

        def launch_once(tag, n_results):
            def once(log):
                order.append(log)
                return [(100.0, None)] * n_results, 1.0
            return once
        self.patch(coll, shutil=types.SimpleNamespace(which=lambda t: "/usr/bin/" + t),
                   gdr_once=lambda s_, ops, blocks, ranks, t, n, w:
                   launch_once("gdr", 2 * len(ops) * len(blocks)),
                   mpi_once=lambda s_, op, blocks, ranks, t, n: launch_once("mpi", 3 * len(blocks)))
        with contextlib.redirect_stdout(io.StringIO()):
            coll.run_coll(s)
        self.assertEqual(order[:6], ["coll-gdr_rc-np2-gdr_perftest-allreduce-bcast-r1",
                                     "coll-gdr_rc-np2-coll_bench-allreduce-r1",
                                     "coll-gdr_rc-np2-coll_bench-bcast-r1",
                                     "coll-gdr_rc-np2-gdr_perftest-allreduce-bcast-r2",
                                     "coll-gdr_rc-np2-coll_bench-allreduce-r2",
                                     "coll-gdr_rc-np2-coll_bench-bcast-r2"])
        table = tables.coll_rows(s.results.rows, s.results.ratios)
        self.assertEqual(len(table), 5 * len(plan.COLL_BLOCKS_QUICK))
        for t in table:
            for k in ("time_ratio", "busbw_ratio", "coll_bench_over_mpi"):
                self.assertEqual((t[k]["median"], t[k]["pairs"]), (1.0, 2), (t["op"], k))


class ToolDiscovery(unittest.TestCase):
    def test_next_to_the_plugin_else_not_built(self):
        build = tempfile.mkdtemp()
        os.makedirs(os.path.join(build, "lib"))
        plugin = os.path.join(build, "lib", "libuct_gdr.so")
        rel = ("perf", "gdr_perftest", "gdr_perftest")
        old_path = os.environ.get("PATH", "")
        os.environ["PATH"] = build  # nothing of that name on PATH
        try:
            path, why = tools.find_tool(None, plugin, rel, "--gdr-perftest")
            self.assertIsNone(path)
            self.assertIn("gdr_perftest not built", why)
            tool = os.path.join(build, *rel)
            os.makedirs(os.path.dirname(tool))
            with open(tool, "w") as f:
                f.write("#!/bin/sh\n")
            os.chmod(tool, 0o755)
            self.assertEqual(tools.find_tool(None, plugin, rel, "--gdr-perftest"), (tool, None))
            path, why = tools.find_tool("/nonexistent/gdr_perftest", plugin, rel,
                                        "--gdr-perftest")
            self.assertIsNone(path)
            self.assertIn("--gdr-perftest /nonexistent/gdr_perftest", why)
        finally:
            os.environ["PATH"] = old_path

    def test_ours_fail_only_with_require_gdr(self):
        self.assertTrue(cli.ours(trow("coll", "bcast", 8, TIME, "rc_verbs", None, "mpi")))
        self.assertTrue(cli.ours(row("ucp", "tag_bw", 8, BW, "gdr_rc", None)))
        self.assertFalse(cli.ours(row("ucp", "tag_bw", 8, BW, "rc_verbs", None)))

    def test_na_by_method_is_no_failure(self):
        by_method = row("cost", "iface_progress", 8, "poll_cq_per_op", "rc_verbs", None, "x")
        by_method["by_method"] = True
        broken = row("cost", "put_short", 8, "instr_per_op", "rc_verbs", None, "timed out")
        self.assertEqual(cli.baseline_failures([by_method, broken]), [broken])

    def test_wrong_data_fails_in_any_section(self):
        # what parsers write for a failed data check (gdr_perftest, coll_bench): a failure even
        # for rows whose n/a passes without --require-gdr
        _, why = parsers.gdr_perftest_value(parsers.parse_gdr_perftest(GP_COLL), "alltoall",
                                            4096, TIME)
        self.assertTrue(cli.wrong(trow("coll", "alltoall", 4096, TIME, "gdr_rc", None, "ours",
                                       reason=why)))
        self.assertTrue(cli.wrong(row("wrapper", "tag_bw", 8, BW, "gdr_rc", None,
                                      "result check WRONG")))
        self.assertFalse(cli.wrong(row("ucp", "tag_bw", 8, BW, "gdr_rc", None, "timed out")))
        self.assertFalse(cli.wrong(row("ucp", "tag_bw", 8, BW, "gdr_rc", 1.0)))


class Repetitions(unittest.TestCase):
    def test_median_of_repetitions(self):
        b = Results(3)
        values = iter([5.0, 1.0, 3.0])
        b.measure("uct", "put_bw", 65536, BW, "rc_verbs", "x",
                  lambda log: (next(values), None, 1.0))
        self.assertEqual(b.rows[0]["value"], 3.0)
        self.assertEqual(b.rows[0]["samples"], [5.0, 1.0, 3.0])

    def test_failed_repetition_is_named_never_averaged(self):
        b = Results(3)
        results = iter([(4.0, None, 1.0), (None, "client timed out after 90 s", 90.0),
                        (6.0, None, 1.0)])
        b.measure("uct", "put_bw", 65536, BW, "gdr_rc", "x", lambda log: next(results))
        self.assertEqual(b.rows[0]["value"], 5.0)
        self.assertIn("1 of 3 runs failed: client timed out", b.rows[0]["reason"])

    def test_measure_set_medians_per_row(self):
        b = Results(3)
        specs = [dict(section="coll", test="bcast", size=8, metric=TIME, transport="gdr_rc",
                      tool="mpi", ranks=2),
                 dict(section="coll", test="bcast", size=8, metric=TIME, transport="gdr_rc",
                      tool="coll_bench", ranks=2)]
        launches = iter([([(5.0, None), (7.0, None)], 2.0),
                         ([(1.0, None), (None, "check WRONG")], 2.0),
                         ([(3.0, None), (9.0, None)], 2.0)])
        b.measure_set(specs, "x", lambda log: next(launches))
        self.assertEqual([r["value"] for r in b.rows], [3.0, 8.0])
        self.assertEqual(b.rows[0]["samples"], [5.0, 1.0, 3.0])
        self.assertIn("1 of 3 runs failed: check WRONG", b.rows[1]["reason"])
        self.assertEqual((b.rows[1]["tool"], b.rows[1]["ranks"], b.rows[1]["wall_s"]),
                         ("coll_bench", 2, 6.0))

    def test_all_failed_is_na(self):
        b = Results(2)
        b.measure("uct", "put_bw", 65536, BW, "gdr_rc", "x", lambda log: (None, "boom", 0.5))
        self.assertIsNone(b.rows[0]["value"])
        self.assertEqual(b.rows[0]["status"], "n/a")
        self.assertEqual(b.rows[0]["reason"], "boom")


class Interleaving(unittest.TestCase):
    """The two sides of a comparison alternate, the ratio is the median of
    the per-pair ratios with min-max, and a spread wider than +-10 % is "noisy", not a number."""

    def test_median_of_ratios_with_min_max(self):
        st = interleave.ratio_stats([1.0, 1.05, 0.97, 1.02, 1.08])
        self.assertEqual((st["median"], st["min"], st["max"], st["pairs"]),
                         (1.02, 0.97, 1.08, 5))
        self.assertAlmostEqual(st["spread"], 1.08 / 1.02 - 1)
        self.assertFalse(st["noisy"])
        self.assertEqual(interleave.ratio_text(st), "1.02 [0.97-1.08]")

    def test_spread_wider_than_ten_percent_is_noisy_not_a_number(self):
        st = interleave.ratio_stats([1.0, 1.2, 0.95, 1.0, 1.01])  # +20 % above the median
        self.assertTrue(st["noisy"])
        self.assertEqual(interleave.ratio_text(st), "noisy [0.95-1.20]")
        low = interleave.ratio_stats([0.85, 1.0, 1.0, 1.0, 1.0])  # -15 % below it
        self.assertTrue(low["noisy"])

    def test_exactly_ten_percent_is_not_noisy(self):
        st = interleave.ratio_stats([0.9, 1.0, 1.1])
        self.assertFalse(st["noisy"])
        self.assertTrue(interleave.ratio_stats([0.95, 1.0, 1.1001])["noisy"])

    def test_one_pair_is_unjudged_and_none_is_na(self):
        st = interleave.ratio_stats([0.8])
        self.assertIsNone(st["spread"])
        self.assertFalse(st["noisy"])
        self.assertEqual(interleave.ratio_text(st), "0.80 [1 pair]")
        self.assertIsNone(interleave.ratio_stats([]))
        self.assertEqual(interleave.ratio_text(None), "n/a")

    def test_failed_run_drops_its_pair_only(self):
        self.assertEqual(interleave.per_pair_ratios([2.0, None, 6.0, 8.0], [1.0, 1.0, None, 4.0]),
                         [2.0, 2.0])

    def interleaved(self, a_values, b_values):
        """Two fake launches; returns (Results, the order in which they ran)."""
        order, loads = [], iter(range(100))
        b = Results(len(a_values), load=lambda: float(next(loads)))

        def side(name, values):
            it = iter(values)

            def once(log):
                order.append(log)
                v = next(it)
                return (v, None if v is not None else "boom", 1.0)
            return once
        a_spec = dict(section="uct", test="put_bw", size=65536, metric=BW, transport="rc_verbs")
        b_spec = dict(a_spec, transport="gdr_rc")
        with contextlib.redirect_stdout(io.StringIO()):
            b.interleave([measure.single(a_spec, "a", side("a", a_values)),
                          measure.single(b_spec, "b", side("b", b_values))],
                         [("gdr_rc/rc_verbs", b_spec, a_spec)])
        return b, order

    def test_sides_alternate_and_the_ratio_is_not_the_ratio_of_medians(self):
        b, order = self.interleaved([1.0, 10.0, 3.0], [2.0, 11.0, 9.0])
        self.assertEqual(order, ["a-r1", "b-r1", "a-r2", "b-r2", "a-r3", "b-r3"])
        self.assertEqual([r["value"] for r in b.rows], [3.0, 9.0])  # ratio of medians: 3
        r = b.ratios[0]
        self.assertEqual(r["ratios"], [2.0, 1.1, 3.0])
        self.assertEqual((r["median"], r["min"], r["max"]), (2.0, 1.1, 3.0))
        self.assertTrue(r["noisy"])
        self.assertEqual(r["loads"], [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])  # start, end per pair
        self.assertEqual(b.rows[0]["loads"], r["loads"])

    def test_tables_and_report_use_the_interleaved_ratio(self):
        b, _ = self.interleaved([10.0, 10.0, 10.0, 10.0, 10.0], [10.0, 10.5, 9.8, 10.1, 12.0])
        table = tables.comparison_rows(b.rows, b.ratios)
        self.assertEqual(table[0]["gdr_over_rc"]["median"], 1.01)
        self.assertTrue(table[0]["gdr_over_rc"]["noisy"])  # 1.2 is 19 % above 1.01
        self.assertEqual(table[0]["load"], (0.0, 9.0))
        out = io.StringIO()
        meta = dict(device="rxe0:1", gid_index=1, ucx_version="1.13.1", kernel="k",
                    in_rxe_vm=True, pairs=5, load_source="host (copied into the VM)")
        with contextlib.redirect_stdout(out):
            report.print_report(dict(meta=meta, rows=b.rows, ratios=b.ratios))
        self.assertIn("noisy [0.98-1.20]", out.getvalue())
        self.assertNotIn("1.01", out.getvalue())  # a noisy median is never printed
        self.assertIn("0.0-9.0", out.getvalue())

    def test_load_from_the_hosts_copy_else_proc(self):
        with tempfile.TemporaryDirectory() as d:
            copy = os.path.join(d, interleave.HOST_LOADAVG)
            with open(copy, "w") as f:
                f.write("12.50 9.00 7.00 3/400 1234\n")
            probe = interleave.LoadProbe(copy, in_vm=True)
            self.assertEqual(probe(), 12.5)
            self.assertEqual(probe.source, "host (copied into the VM)")
            os.remove(copy)
            self.assertIsNotNone(probe())  # the guest's own /proc/loadavg
            self.assertEqual(probe.source, "guest")

    def test_host_load_writer_keeps_a_copy_then_removes_it(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, interleave.HOST_LOADAVG)
            with interleave.HostLoadWriter(path, period=0.05):
                self.assertIsNotNone(interleave.LoadProbe.read(path))
            self.assertFalse(os.path.exists(path))


class MessageRate(unittest.TestCase):
    def test_message_rate_is_the_overall_rate(self):
        self.assertEqual(parsers.parse_ucx_perftest(UCX_BW_AVG_INF, MR), (7.0, None))

    def test_uct_has_put_short_and_am_short_message_rates(self):
        mr = [(t, size, layout) for t, size, layout, metric in plan.UCT_TESTS if metric == MR]
        self.assertEqual(mr, [("put_bw", 8, "short"), ("am_bw", 8, "short")])
        self.assertGreater(plan.MR_WINDOW, 1)

    def test_no_raw_peer_for_a_message_rate(self):
        rows = [row("uct", "put_bw", 8, MR, "rc_verbs", 1e5), row("uct", "put_bw", 8, MR,
                                                                  "gdr_rc", 1.1e5)]
        t = tables.comparison_rows(rows)[0]
        self.assertIsNone(t["raw_tool"])
        self.assertAlmostEqual(t["gdr_over_rc"]["median"], 1.1)


def python(code):
    return [sys.executable, "-c", code]


class PairRunner(unittest.TestCase):
    def setUp(self):
        self.logs = tempfile.mkdtemp()

    def free_port(self):
        # below the ephemeral range (as tests/common/loopback_port.hpp): a port bind(0) hands out
        # and that is closed again is the next connect()'s of any process under a parallel ctest
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
        for _ in range(200):
            port = random.randint(10000, max(low - 1, 10001))
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                    return port
                except OSError:
                    continue
        self.fail("no free loopback port below the ephemeral range")

    def pair(self, name, server, client, port, timeout_s):
        return launch.run_pair(name, server, client, dict(os.environ), port, timeout_s, self.logs)

    def test_tcp_listening_reads_proc(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            self.assertFalse(launch.tcp_listening(port))
            s.listen()
            self.assertTrue(launch.tcp_listening(port))

    def test_server_that_never_listens_does_not_hang(self):
        t0 = time.monotonic()
        ok, _, _, why, _ = self.pair("silent", python("import time; time.sleep(60)"), ["true"],
                                     self.free_port(), 2)
        self.assertFalse(ok)
        self.assertIn("listen", why)  # "did not listen" or "exited before listening"
        self.assertLess(time.monotonic() - t0, 15)

    def test_failing_client_ends_a_waiting_server(self):
        port = self.free_port()
        server = python(f"import socket, time; s = socket.socket(); "
                        f"s.bind(('127.0.0.1', {port})); s.listen(); time.sleep(60)")
        client = python("import sys; print('UCX ERROR transport gdr_rc not found'); sys.exit(1)")
        t0 = time.monotonic()
        ok, cout, _, why, _ = self.pair("client-fails", server, client, port, 60)
        self.assertFalse(ok)
        self.assertIn("gdr_rc not found", why)
        self.assertLess(time.monotonic() - t0, 20)
        self.assertTrue(os.path.exists(os.path.join(self.logs, "client-fails.server.log")))

    def fake_remote(self):
        """A Remote whose 'shell' runs the command line here, in a shell of its own, as ssh
        would on the host: what crosses is only the command line and the variables in it"""
        shell = os.path.join(self.logs, "fake-ssh")
        with open(shell, "w") as f:
            f.write('#!/bin/sh\n# fake-ssh HOST COMMAND-LINE\nshift\nexec env -i PATH="$PATH" '
                    'sh -c "$1"\n')
        os.chmod(shell, 0o755)
        return launch.Remote("peerhost", [shell])

    def test_remote_server_gets_the_measuring_environment_and_the_pair_runs(self):
        port = self.free_port()
        server = python(f"import os, socket; s = socket.socket(); "
                        f"s.bind(('127.0.0.1', {port})); s.listen(); c, _ = s.accept(); "
                        "c.recv(10); print('server sees', os.environ.get('UCX_TLS'), "
                        "os.environ.get('HOME_NOT_PASSED'))")
        client = python(f"import socket; s = socket.create_connection(('127.0.0.1', {port})); "
                        "s.send(b'x'); print('1,2')")
        env = dict(os.environ, UCX_TLS="gdr_rc,ud_verbs:aux", HOME_NOT_PASSED="1")
        ok, cout, sout, why, _ = launch.run_pair("remote", server, client, env, port, 30,
                                                 self.logs, remote=self.fake_remote())
        self.assertTrue(ok, why)
        self.assertIn("1,2", cout)
        self.assertIn("server sees gdr_rc,ud_verbs:aux None", sout)

    def test_a_killed_pair_leaves_no_remote_server_behind(self):
        port = self.free_port()
        marker = os.path.join(self.logs, "server-pid")
        server = python(f"import os, socket, time; open({marker!r}, 'w').write(str(os.getpid())); "
                        f"s = socket.socket(); s.bind(('127.0.0.1', {port})); s.listen(); "
                        "time.sleep(120)")
        client = python("import time; time.sleep(120)")  # says nothing: stalls
        ok, _, _, why, _ = launch.run_pair("remote-stall", server, client, dict(os.environ), port,
                                           2, self.logs, remote=self.fake_remote())
        self.assertFalse(ok)
        self.assertIn("no progress", why)
        with open(marker) as f:
            pid = int(f.read())
        for _ in range(50):  # the server learns of it when its launcher's stdin closes
            if not os.path.exists(f"/proc/{pid}") or " Z " in open(f"/proc/{pid}/stat").read():
                break
            time.sleep(0.1)
        else:
            self.fail(f"the remote server (pid {pid}) outlived its pair")

    def test_successful_pair(self):
        port = self.free_port()
        server = python(f"import socket; s = socket.socket(); s.bind(('127.0.0.1', {port})); "
                        "s.listen(); c, _ = s.accept(); c.recv(10)")
        client = python(f"import socket; s = socket.create_connection(('127.0.0.1', {port})); "
                        "s.send(b'x'); print('1,2')")
        ok, cout, _, why, _ = self.pair("good", server, client, port, 30)
        self.assertTrue(ok, why)
        self.assertIn("1,2", cout)



class ProgressFollowingTimeout(unittest.TestCase):
    """launch.py's bound follows progress: a pair or launch that keeps printing (or writing
    profiles) is not ended at --timeout, a silent one is, with a reason that names the bound and
    the last line it printed.  Fake clients, a 1 s bound."""

    def setUp(self):
        self.logs = tempfile.mkdtemp()
        self.port = PairRunner.free_port(self)

    def listening_server(self):
        return python(f"import socket, time; s = socket.socket(); "
                      f"s.bind(('127.0.0.1', {self.port})); s.listen(); time.sleep(60)")

    def pair(self, client, stall_s=1.0, probe=None):
        return launch.run_pair("fake", self.listening_server(), client, dict(os.environ),
                               self.port, stall_s, self.logs, exit_s=1, probe=probe)

    def test_a_client_that_keeps_printing_outlives_the_bound(self):
        steady = python("import time\nfor i in range(50):\n print('Final: test', i, flush=True)"
                        "\n time.sleep(0.1)")
        t0 = time.monotonic()
        with contextlib.redirect_stdout(io.StringIO()):
            ok, cout, _, why, _ = self.pair(steady, stall_s=2.0)
        self.assertGreater(time.monotonic() - t0, 4.5)  # 5 s of output, 2 s bound: not ended
        self.assertEqual(cout.count("Final:"), 50)
        # the server (sleeping, killed after the client) is the only complaint: not the client
        self.assertNotIn("client ended", why or "")

    def test_a_client_that_stalls_is_ended_with_the_reason(self):
        stalls = python("import time; print('Final: put_short', flush=True); time.sleep(60)")
        t0 = time.monotonic()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            ok, cout, _, why, _ = self.pair(stalls)
        self.assertFalse(ok)
        self.assertLess(time.monotonic() - t0, 15)
        self.assertRegex(why, launch.STALLED)
        self.assertIn("client ended: no progress for 1 s", why)
        self.assertIn("Final: put_short", why)  # the last line it printed
        self.assertEqual(len(why.splitlines()), 1)
        self.assertIn(why, out.getvalue())  # said when it happens, once
        with open(os.path.join(self.logs, "fake.client.log")) as f:
            self.assertIn("Final: put_short", f.read())  # the output so far is kept

    def test_a_silent_client_whose_probe_moves_is_progressing(self):
        # callgrind writes a profile per call: a client under valgrind that prints nothing for a
        # while but writes files is progressing
        with tempfile.TemporaryDirectory() as scratch:
            writes = python(f"import os, time\nfor i in range(40):\n"
                            f" open(os.path.join({scratch!r}, str(i)), 'w').close()\n"
                            f" time.sleep(0.1)")
            with contextlib.redirect_stdout(io.StringIO()):
                ok, _, _, why, _ = self.pair(writes, 2.0, cost.profiles_written(scratch))
            self.assertNotIn("client ended", why or "")
            with contextlib.redirect_stdout(io.StringIO()):
                ok, _, _, why, _ = self.pair(writes, 2.0)  # the same without the probe: silent
            self.assertIn("client ended: no progress", why)

    def test_a_server_that_computes_silently_before_it_listens_is_starting(self):
        # UCX's and valgrind's start-up print nothing; the CPU it uses is its progress until it
        # listens (a server that sleeps instead is stuck)
        def server(before):
            return python(f"import socket, time\n{before}\ns = socket.socket(); "
                          f"s.bind(('127.0.0.1', {self.port})); s.listen(); time.sleep(60)")
        busy = "t = time.time()\nwhile time.time() - t < 3: pass"
        with contextlib.redirect_stdout(io.StringIO()):
            ok, _, _, why, _ = launch.run_pair("starting", server(busy), ["true"],
                                               dict(os.environ), self.port, 1.5, self.logs,
                                               exit_s=1)
        self.assertNotIn("did not listen", why or "")
        with contextlib.redirect_stdout(io.StringIO()):
            ok, _, _, why, _ = launch.run_pair("stuck", server("time.sleep(30)"), ["true"],
                                               dict(os.environ), self.port, 1.0, self.logs)
        self.assertIn("server did not listen on TCP port", why)
        self.assertIn("no progress for 1 s", why)

    def test_a_launch_that_keeps_printing_outlives_the_bound_and_a_stuck_one_does_not(self):
        steady = python("import time\nfor i in range(40):\n print(i, flush=True)\n"
                        " time.sleep(0.1)")
        ok, out, why, wall = launch.run_single("steady", steady, dict(os.environ), 2.0,
                                               self.logs)
        self.assertTrue(ok, why)
        self.assertGreater(wall, 3.5)
        stuck = python("import time; print('waiting for rank 1', flush=True); time.sleep(60)")
        with contextlib.redirect_stdout(io.StringIO()):
            ok, out, why, wall = launch.run_single("stuck", stuck, dict(os.environ), 1.0,
                                                   self.logs)
        self.assertFalse(ok)
        self.assertLess(wall, 15)
        self.assertIn("launch ended: no progress for 1 s (last output: 'waiting for rank 1')",
                      why)

    def test_one_that_progresses_forever_ends_at_the_cap(self):
        chatty = python("import time\nwhile True:\n print('x', flush=True)\n time.sleep(0.05)")
        with contextlib.redirect_stdout(io.StringIO()):
            ok, _, why, wall = launch.run_single("chatty", chatty, dict(os.environ), 2.0,
                                                 self.logs, cap_s=3.0)
        self.assertFalse(ok)
        self.assertIn("still running after 3 s in all", why)
        self.assertLess(wall, 15)


class EndedBatch(unittest.TestCase):
    """A batch pair ended before its end keeps the rows of the tests it finished (testdata:
    the client of the demo's rc_verbs batch, ended after am_short's Final: line by the fixed
    90 s limit there was before)."""

    def test_finished_tests_of_a_batch_log(self):
        self.assertEqual(cost.finished_tests(captured("ucx_perftest-batch-ended.txt")),
                         ["put_short", "am_short"])
        self.assertEqual(cost.finished_tests("+put_short----+---+\n[thread 0] 5 1 2\n"), [])

    def test_finished_rows_keep_their_values(self):
        a, b, c = "uct_rc_verbs_ep_put_short", "uct_rc_verbs_ep_am_short", "uct_rc_verbs_ep_x"
        rows = [types.SimpleNamespace(name=n) for n in ("put_short", "am_short", "put_bcopy")]
        ops = 6

        def dump(trigger, instr, counts):
            return (f"--dump-before={trigger}" if trigger else "Program termination",
                    {"ops": 0, "instr_per_op": instr, "post_send_per_op": 1}, counts)
        # a: 6 calls of 332 (each dump holds the call before); b: 6 calls of 382, its last one
        # in a dump never written (ended in c's start-up); c: 2 calls of 1000, unfinished
        dumps = [dump(a, 0, {})]
        dumps += [dump(a, 332, {a: 1}) for _ in range(5)]
        dumps += [dump(b, 332, {a: 1})] + [dump(b, 382, {b: 1}) for _ in range(5)]
        dumps += [dump(c, 382, {b: 1}), dump(c, 1000, {c: 1})]
        results, calls = cost.batch_results(rows, [a, b, c], dumps, ops,
                                            ["put_short", "am_short"], "client ended: x")
        self.assertEqual(results[0][0]["instr_per_op"], 332)  # calls 3 and 4 of 6
        self.assertEqual(results[1][0]["instr_per_op"], 382)
        self.assertEqual(results[2], (None, "client ended: x"))
        # the same calls as a complete run gives them: ops/2 .. ops-2
        self.assertEqual(cost.per_operation(calls[a], ops), cost.per_operation(calls[a]))


class RunVerdict(unittest.TestCase):
    """--require-gdr judges gdr_rc: a reference (rc_verbs) row n/a is said, once, and the run
    passes; a gdr_rc row n/a fails it; the last line says where the files are."""

    def run_verdict(self, rows, require_gdr=True):
        args = types.SimpleNamespace(require_gdr=require_gdr, out=os.path.abspath("results/x"))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cli.verdict(args, dict(rows=rows), 12.3, ["results.json", "cost.png"])
        return rc, out.getvalue(), err.getvalue()

    def test_reference_na_passes_with_require_gdr(self):
        stalled = "client ended: no progress for 90 s (last output: 'Final: ...')"
        rows = [row("cost", "put_short", 8, "instr_per_op", "gdr_rc", 314.0),
                row("cost", "put_bcopy", 8, "instr_per_op", "rc_verbs", None, stalled)]
        rc, out, err = self.run_verdict(rows)
        self.assertEqual(rc, 0)
        self.assertEqual(err.count("reference result(s) n/a"), 1)
        self.assertIn("--timeout", err)  # ended for lack of progress: the knob is named
        self.assertIn("DEMO_ARGS", err)
        self.assertTrue(out.rstrip().endswith("output in results/x/logs/"), out)
        self.assertIn("results in results/x/: results.json, cost.png", out)
        self.assertEqual(self.run_verdict(rows, require_gdr=False)[0], 1)

    def test_gdr_na_fails_with_require_gdr(self):
        rows = [row("cost", "put_short", 8, "instr_per_op", "gdr_rc", None, "exit status 1: x")]
        rc, _, err = self.run_verdict(rows)
        self.assertEqual(rc, 1)
        self.assertIn("1 gdr_rc/wrapper/coll result(s) n/a; --require-gdr", err)
        self.assertNotIn("--timeout", err)
        self.assertEqual(self.run_verdict(rows, require_gdr=False)[0], 0)


def full_cost_results():
    """A results.json of the largest result set in the schema a run writes: every row of the
    full cost section (the registration phases too) with all five counts on both transports,
    values from tens to a hundred thousand instructions (log scale), the counts n/a by method on
    the progress row, an rc_verbs row ended for lack of progress, plus the demo's wall-clock
    rows with 3 interleaved pairs, one of them noisy."""
    rows, ratios = [], []
    stalled = "client ended: no progress for 90 s (last output: 'Final: 66 ...')"
    names = list(cost.ROW_NAMES) + list(registration.PHASES)
    for i, name in enumerate(names):
        size = next((r.size for r in cost.COST_ROWS if r.name == name), registration.SIZE)
        for transport, scale in (("rc_verbs", 1.0), ("gdr_rc", 0.95)):
            for metric in cost.METRICS:
                value = (40 * 1.35 ** i * scale) if metric == cost.INSTR else float(i % 3)
                reason = None
                if name == "am_bcopy" and transport == "rc_verbs":
                    value, reason = None, stalled
                r = dict(row("cost", name, size, metric, transport, value, reason),
                         tool="callgrind", ranks=2, samples=[], loads=[], wall_s=60.0,
                         log=f"logs/cost-{transport}-{name}")
                if name == "iface_progress" and metric == "post_recv_per_op":
                    r.update(value=None, status="n/a", reason="no verbs calls by method",
                             by_method=True)
                rows.append(r)
    loads = [[3.1, 3.4], [3.4, 3.9], [3.9, 4.2]]
    for section, test, size, metric, rc, gdr in (
            ("uct", "put_lat", 8, LAT, [11.0, 11.5, 12.0], [10.5, 11.0, 11.8]),
            ("uct", "put_bw", 65536, BW, [13.2, 10.9, 18.1], [19.5, 10.6, 15.5]),  # noisy
            ("ucp", "tag_lat", 8, LAT, [20.0, 21.0, 19.0], [18.0, 19.5, 18.0])):
        spec = dict(section=section, test=test, size=size, metric=metric)
        for transport, samples in (("rc_verbs", rc), ("gdr_rc", gdr)):
            rows.append(dict(row(section, test, size, metric, transport,
                                 sorted(samples)[1]), tool="ucx_perftest", ranks=2,
                             samples=samples, loads=loads, wall_s=3.0, log=None))
        stats = interleave.ratio_stats([g / r for g, r in zip(gdr, rc)])
        ratios.append(dict(label="gdr_rc/rc_verbs",
                           of=measure.row_key(dict(spec, transport="gdr_rc")),
                           to=measure.row_key(dict(spec, transport="rc_verbs")),
                           ratios=[g / r for g, r in zip(gdr, rc)], loads=loads, **stats))
    meta = dict(device="rxe0:1", gid_index=1, ucx_version="1.13.1", kernel="6.1.0",
                in_rxe_vm=True, pairs=3, load_source="host (copied into the VM)",
                host_loadavg_start=[3.1, 2.0, 1.5], host_loadavg_end=[4.2, 3.0, 2.0])
    return dict(meta=meta, rows=rows, ratios=ratios)


class PlotsOfTheLargestResultSet(unittest.TestCase):
    """The plots of every row of the full cost section stay readable (a bounded picture, at
    most plots.COST_ROWS_PER_PANEL rows a panel; the full run once died drawing it: 'Image size
    of 3724x112450 pixels is too large', an n/a marker placed at y=0 on a log axis), n/a rows
    are marked, and every ratio under a bar reads as the table prints it (the bandwidth plot
    once said 'gdr/rc 1.48' where the table said 'noisy')."""

    def setUp(self):
        from gdr_compare import plots
        self.plots = plots
        self.plt = plots.pyplot()
        if self.plt is None:
            self.skipTest("no matplotlib")

    def render(self):
        """render() of the fixture -> (report text, {png: (its labels, width, height px)})."""
        from gdr_compare import render
        drawn = {}
        real_save = self.plots.save

        def save(plt, fig, outdir, name):
            labels = [t.get_text() for ax in fig.axes for t in ax.get_xticklabels()]
            marks = [t.get_text() for ax in fig.axes for t in ax.texts]
            real_save(plt, fig, outdir, name)
            import matplotlib.image
            height, width = matplotlib.image.imread(os.path.join(outdir, name)).shape[:2]
            drawn[name] = (labels, marks, width, height, len(fig.axes))
            return name
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "results.json"), "w") as f:
                json.dump(full_cost_results(), f)
            self.plots.save = save
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out):
                    files = render.render(d, quiet=True)
            finally:
                self.plots.save = real_save
            with open(os.path.join(d, "results.json")) as f:
                doc = json.load(f)
        self.assertEqual(files, ["results.json", "results.csv", "latency.png", "bandwidth.png",
                                 "cost.png"])
        return out.getvalue(), drawn, doc

    def test_every_cost_row_readable_and_as_the_table_says(self):
        text, drawn, doc = self.render()
        labels, marks, width, height, panels = drawn["cost.png"]
        rows = [t for t in doc["comparison"] if t["section"] == "cost"
                and t["metric"] == "instr_per_op"]
        self.assertEqual(len(rows), len(cost.ROW_NAMES) + len(registration.PHASES))
        self.assertEqual(len(labels), len(rows))  # every row drawn
        self.assertEqual(panels, -(-len(rows) // self.plots.COST_ROWS_PER_PANEL))
        # one panel's width (12 rows at 110 dpi plus the legend), a panel's height per panel
        self.assertLess(width, 2400)
        self.assertLess(height, 650 * panels)
        self.assertIn("n/a", marks)  # the stalled rc_verbs am_bcopy: marked, not drawn
        lines = text.splitlines()
        for t in rows:  # the ratio under the bars is the table's
            label = next(x for x in labels if x.rsplit("\n", 2)[0].replace("\n", "") == t["test"])
            self.assertLessEqual(max(len(x) for x in label.splitlines()), 16)  # no overlap
            shown = report.cost_ratio(t["gdr_over_rc"])
            self.assertTrue(label.endswith(f"gdr/rc {shown}"), (label, shown))
            self.assertTrue(any(x.startswith(t["test"] + " ") and f" {shown} " in x + " "
                                for x in lines), (t["test"], shown))

    def test_wall_clock_ratios_read_as_the_table_says(self):
        text, drawn, doc = self.render()
        labels = drawn["bandwidth.png"][0] + drawn["latency.png"][0]
        for width, height in [d[2:4] for d in drawn.values()]:
            self.assertLess(width * height, 2400 * 3000)
        for t in doc["comparison"]:
            if t["section"] == "cost":
                continue
            label = next(x for x in labels if x.startswith(f"{t['section']} {t['test']}\n"))
            table_text = report.fmt_ratio(t["gdr_over_rc"])  # what the table's gdr/rc says
            self.assertIn(table_text, text)
            self.assertIn(table_text.replace(" ", "\n"), label)
            self.assertIn(report.verdict(t["gdr_over_rc"], t["metric"]), label)
        put_bw = next(x for x in labels if x.startswith("uct put_bw"))
        self.assertIn("gdr/rc noisy\n[", put_bw)  # never the median of a noisy ratio


class CostRegressionSecondAttempt(unittest.TestCase):
    """perf/cost/regression measures an n/a row once more and never a dearer one"""

    def setUp(self):
        import importlib.machinery
        import importlib.util
        path = os.path.join(os.path.dirname(os.path.dirname(HERE)), "perf", "cost", "regression")
        loader = importlib.machinery.SourceFileLoader("cost_regression", path)
        self.reg = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name,
                                                                                   loader))
        loader.exec_module(self.reg)
        self.calls = []

    def run_with(self, attempts, rows):
        def fake_measure(names, out, plugin, a):
            self.calls.append(list(names))
            return [b for b in attempts[len(self.calls) - 1] if b[0] in names]
        self.reg.measure = fake_measure
        with tempfile.TemporaryDirectory() as build:
            os.makedirs(os.path.join(build, "lib"))
            open(os.path.join(build, "lib", "libuct_gdr.so"), "w").close()
            argv = ["regression", "--build", build, "--rows", rows]
            with unittest.mock.patch.object(sys, "argv", argv), \
                    contextlib.redirect_stdout(io.StringIO()) as out, \
                    contextlib.redirect_stderr(io.StringIO()) as err:
                rc = self.reg.main()
        return rc, out.getvalue() + err.getvalue()

    def test_a_row_unmeasured_once_passes_when_measured_the_second_time(self):
        na = ("put_short", 332.0, None, "n/a (gdr_rc: exit status 1: UCX  ERROR boom)")
        rc, out = self.run_with([[na], []], "put_short,am_short")
        self.assertEqual(rc, 0, out)
        self.assertEqual(self.calls, [["put_short", "am_short"], ["put_short"]])
        self.assertIn("put_short was not measured: n/a (gdr_rc: exit status 1: UCX  ERROR boom)",
                      out)
        self.assertIn("put_short measured on the second attempt", out)

    def test_a_row_unmeasured_twice_fails(self):
        na = ("put_short", 332.0, None, "n/a (gdr_rc: exit status 1)")
        rc, out = self.run_with([[na], [na]], "put_short")
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL put_short", out)

    def test_a_dearer_row_is_never_measured_again(self):
        dear = ("put_short", 332.0, 340.0, "gdr_rc executes 1.024x rc_verbs' instructions")
        rc, out = self.run_with([[dear]], "put_short")
        self.assertEqual(rc, 1, out)
        self.assertEqual(self.calls, [["put_short"]])


class RegistrationSection(unittest.TestCase):
    """gdr_reg_bench -c's phase lines and its per-phase callgrind dumps -> values per call."""

    def test_phase_lines_are_ns_per_call(self):
        out = ("phase=reg_miss calls=50 size=65536 devices=2 ns_per_call=81234.5\n"
               "phase=reg_hit calls=50 size=65536 devices=2 ns_per_call=410.0\nnoise\n")
        self.assertEqual(registration.timed(out), {"reg_miss": 81234.5, "reg_hit": 410.0})
        out = "phase=reg_hit unavailable: uct_md_open(gdr, RCACHE=y): Unsupported operation\n"
        self.assertEqual(registration.timed(out), {})
        self.assertEqual(registration.unavailable(out),
                         {"reg_hit": "uct_md_open(gdr, RCACHE=y): Unsupported operation"})

    def test_a_dump_is_its_phase_total_over_the_calls(self):
        dump = ("version: 1\ncreator: callgrind-3.19.0\npid: 42\ncmd: gdr_reg_bench -c\n"
                "part: 3\n\ndesc: I1 cache:\ndesc: Trigger: Client Request: phase-reg_hit\n"
                "\npositions: line\nevents: Ir\n\nob=(1) /usr/lib/libucs.so.0\n"
                "fn=(1) ucs_rcache_get\n0 3000\ncfn=(2) memcpy\ncalls=50 0\n0 500\n"
                "ob=(2) /usr/lib/libc.so.6\nfn=(2)\n0 500\n\ntotals: 3500\n")
        with tempfile.TemporaryDirectory() as d:
            paths = [os.path.join(d, "x.out.1"), os.path.join(d, "x.out.2")]
            with open(paths[0], "w") as f:
                f.write(dump)
            with open(paths[1], "w") as f:  # the dump at exit has no phase: not a row
                f.write(dump.replace("Client Request: phase-reg_hit", "Program termination"))
            self.assertEqual(registration.counted(paths),
                             {"reg_hit": 3500 / registration.COUNT})

    def test_md_of_each_transport(self):
        s = types.SimpleNamespace(port=types.SimpleNamespace(device="rxe0"))
        self.assertEqual(registration.md_spec(s, "gdr_rc"), "gdr:gdr_rxe0")
        self.assertEqual(registration.md_spec(s, "rc_verbs"), "ib:rxe0")


class Demo(unittest.TestCase):
    """make demo: the exact table first, then wall-clock rows with their spread, a
    ratio whose min-max straddles 1.0 said to be "not telling"."""

    def test_verdict_of_a_ratio(self):
        def r(lo, med, hi, pairs=3):
            return dict(median=med, min=lo, max=hi, pairs=pairs)
        self.assertEqual(report.verdict(r(0.9, 0.95, 1.02), LAT), "not telling")
        self.assertEqual(report.verdict(r(0.5, 0.6, 0.8), LAT), "gdr_rc faster")
        self.assertEqual(report.verdict(r(0.5, 0.6, 0.8), BW), "gdr_rc slower")
        self.assertEqual(report.verdict(r(1.1, 1.2, 1.3), BW), "gdr_rc faster")
        self.assertEqual(report.verdict(r(0.5, 0.6, 0.8, pairs=1), LAT), "unjudged (1 pair)")
        self.assertEqual(report.verdict(None, LAT), "n/a")

    def test_cost_table_comes_first_and_wall_rows_carry_their_spread(self):
        b = Results(3, load=lambda: 1.0)
        spec = dict(section="uct", test="put_lat", size=8, metric=LAT)
        side = {t: dict(spec, transport=t) for t in ("rc_verbs", "gdr_rc")}
        vals = {"rc_verbs": iter([20.0, 22.0, 30.0]), "gdr_rc": iter([21.0, 20.0, 27.0])}
        with contextlib.redirect_stdout(io.StringIO()):
            b.interleave([measure.single(side[t], t, lambda n, t=t: (next(vals[t]), None, 1.0))
                          for t in side], [("gdr_rc/rc_verbs", side["gdr_rc"], side["rc_verbs"])])
        for t, v in (("rc_verbs", 332.0), ("gdr_rc", 314.0)):
            b.rows.append(row("cost", "put_short", 8, "instr_per_op", t, v))
        out = io.StringIO()
        meta = dict(device="rxe0:1", gid_index=1, ucx_version="1.13.1", kernel="k",
                    in_rxe_vm=True, pairs=3)
        with contextlib.redirect_stdout(out):
            report.print_report(dict(meta=meta, rows=b.rows, ratios=b.ratios))
        text = out.getvalue()
        self.assertLess(text.index("Exact cost"), text.index("Wall clock"))
        self.assertIn("0.946", text)
        self.assertIn("gdr_rc cheaper", text)
        self.assertIn("22.00 [20-30]", text)  # rc_verbs' median and the min-max of its runs
        self.assertIn("not telling", text)  # per pair 1.05, 0.91, 0.90
        self.assertNotIn("raw verbs", text)  # no raw section: no raw columns

    def test_demo_runs_its_rows_only(self):
        s = types.SimpleNamespace(args=types.SimpleNamespace(demo=True))
        self.assertTrue(ucx.in_demo(s, "uct", "put_lat", 8))
        self.assertFalse(ucx.in_demo(s, "uct", "put_bw", MiB))
        s.args.demo = False
        self.assertTrue(ucx.in_demo(s, "uct", "put_bw", MiB))
        self.assertEqual(plan.DEMO_SECTIONS[0], "cost")  # the exact table is measured first
        # the CI regression's rows (perf/cost/regression's default)
        with open(os.path.join(os.path.dirname(os.path.dirname(HERE)), "perf", "cost",
                               "regression")) as f:
            self.assertIn('DEFAULT_ROWS = "' + ",".join(plan.DEMO_COST_ROWS) + ',', f.read())
        # 66 operations: the mean of 32 calls, one period of gdr_rc's TX_MODERATION (32)
        calls = list(range(plan.DEMO_COST_OPS))
        last = calls[len(calls) // 2:][:-1]
        self.assertEqual(len(last), 32)


if __name__ == "__main__":
    unittest.main(verbosity=2)
