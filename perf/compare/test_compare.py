#!/usr/bin/python3
"""Host tests of perf/compare/run: output parsers (on outputs captured from ucx_perftest 1.13.1,
perftest 4.5, gdr_perftest 0.1.0 and coll_bench in the Soft-RoCE VM), the comparison tables (transports,
wrapper, collectives), tool discovery, and the pair runner's guarantees (a server that never listens,
or a client that fails, ends the pair promptly instead of hanging it)."""
import importlib.machinery
import importlib.util
import os
import socket
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True  # keep the source tree clean of __pycache__
HERE = os.path.dirname(os.path.realpath(__file__))
_loader = importlib.machinery.SourceFileLoader("compare", os.path.join(HERE, "run"))
_spec = importlib.util.spec_from_loader("compare", _loader)
compare = importlib.util.module_from_spec(_spec)
_loader.exec_module(compare)

UCX_LAT = """iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr
1000,43.500,815.333,580.238,0.01,0.01,1226,1723
"""
UCX_BW_AVG_INF = """iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr
  30,94662.000,inf,158333.564,0.00,6.32,4,7
"""
UCX_ALL_INF = """iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr
  30,inf,inf,inf,0.00,inf,4,7
"""
UCX_FAILED = """[1700000000.000000] [rxe-vm:123  :0]   perftest.c:123  UCX  ERROR  Unsupported operation
[1700000000.000000] [rxe-vm:123  :0]   libperf.c:456   UCX  ERROR  no transport gdr_rc on rxe0:1
"""
PT_LAT = """ #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] 
 8       1000          5.10           120.55       9.40     	       10.21       	2.50   		30.12     		90.00    
---------------------------------------------------------------------------------------
"""
PT_LAT_UNCALIBRATED = """Correlation coefficient r^2: 0.890815 < 0.9
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] 
 8       1000          inf            inf          inf      	       inf         	-nan   		inf     		inf    
"""
PT_BW = """ #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
 65536      200              9.78               9.77   		   0.000156
---------------------------------------------------------------------------------------
"""

# gdr_perftest and coll_bench, captured from `perf/compare/run --quick --section wrapper --section coll`
# in the Soft-RoCE VM (logs/wrapper-gdr_rc-gdr_perftest-*.log, logs/coll-gdr_rc-np2-*.log), gdr_rc.
GP_TAG_LAT = """# gdr_perftest 0.1.0: tag_lat, 2 ranks (local (-N) on rxe-vm), memory host, UCX_TLS=gdr_rc,ud_verbs:aux (environment)
# 1000 iterations after 100 warm-up; data check: length of every message, content of the last (-c 0)
# units: size in bytes; times in us (1 us = 10^-6 s); bandwidth in GB/s (1 GB = 10^9 B); rate in msg/s
# latency: half round trip, measured at rank 0; avg and percentiles over the per-iteration samples
        size    iters     avg_us     p50_us     p90_us     p99_us   bytes_verified  check
           8     1000    2566.88    2045.58    4026.86    7217.20            16000     ok
"""
GP_PUT_BW = """# gdr_perftest 0.1.0: put_bw, 2 ranks (local (-N) on rxe-vm), memory host, UCX_TLS=gdr_rc,ud_verbs:aux (environment)
# 30 iterations after 3 warm-up; data check: length of every message, content of the last (-c 0)
# units: size in bytes; times in us (1 us = 10^-6 s); bandwidth in GB/s (1 GB = 10^9 B); rate in msg/s
# bandwidth: bytes delivered / time at rank 0 from the first put until the flush completed; avg_us = time per message
        size    iters     avg_us      bw_GBps      msg_per_s   bytes_verified  check
     1048576       30  100086.70       0.0105             10         31457280     ok
"""
GP_COLL = """# gdr_perftest 0.1.0: allgather, 2 ranks (mpirun on rxe-vm), memory host, UCX_TLS=gdr_rc,ud_verbs:aux (environment)
# 50 iterations after 5 warm-up; data check: result of one more, untimed call (-c 0)
# units: size in bytes; times in us (1 us = 10^-6 s); bandwidth in GB/s (1 GB = 10^9 B); rate in msg/s
# time per call, max over ranks (avg: whole timed loop / iters; percentiles: per-call samples, max over ranks per call); algbw = size / time, busbw = algbw * factor (nccl-tests)
        size        count    type    iters    time_us     p50_us     p90_us     p99_us  algbw_GBps  busbw_GBps   bytes_verified  check
          16            2   float       50     116.49      79.28     137.58     632.15      0.0001      0.0001               32     ok
        4096          512   float       50     199.37     173.51     207.83     606.67      0.0205      0.0103             8192     ok
       65536         8192   float       50    2249.24    2018.31    2954.70   10801.56      0.0291      0.0146           131072     ok

# gdr_perftest 0.1.0: alltoall, 2 ranks (mpirun on rxe-vm), memory host, UCX_TLS=gdr_rc,ud_verbs:aux (environment)
# 50 iterations after 5 warm-up; data check: result of one more, untimed call (-c 0)
# units: size in bytes; times in us (1 us = 10^-6 s); bandwidth in GB/s (1 GB = 10^9 B); rate in msg/s
# time per call, max over ranks (avg: whole timed loop / iters; percentiles: per-call samples, max over ranks per call); algbw = size / time, busbw = algbw * factor (nccl-tests)
        size        count    type    iters    time_us     p50_us     p90_us     p99_us  algbw_GBps  busbw_GBps   bytes_verified  check
          16            2   float       50     108.87      83.82     183.77     605.42      0.0001      0.0001               32     ok
        4096          512   float       50     193.70     170.01     205.21     696.67      0.0211      0.0106             8192  WRONG
"""
CB_ALLTOALL = """# coll_bench alltoall, 2 ranks, ours: automatic; time per call in us (max over ranks, best of 1), busbw in GB/s, ratio = mpi_us / ours_us (> 1: ours faster)
       bytes      ours_us       mpi_us   ours_busbw    mpi_busbw   ratio  check
           8       424.06      2116.41        0.000        0.000    4.99     ok
          32      2520.71      2002.55        0.000        0.000    0.79     ok
        2048      2245.74      1470.46        0.001        0.001    0.65  WRONG
       32768      8147.30      8182.71        0.004        0.004    1.00     ok
# latency (8 B) alltoall: ours 424.06 us, mpi 2116.41 us
"""


class Parsers(unittest.TestCase):
    def test_ucx_latency_is_the_median(self):
        self.assertEqual(compare.parse_ucx_perftest(UCX_LAT, compare.LAT), (43.5, None))

    def test_ucx_bandwidth_is_the_overall_average_even_if_other_fields_are_inf(self):
        self.assertEqual(compare.parse_ucx_perftest(UCX_BW_AVG_INF, compare.BW), (6.32, None))

    def test_ucx_non_finite_is_not_a_number(self):
        value, why = compare.parse_ucx_perftest(UCX_ALL_INF, compare.BW)
        self.assertIsNone(value)
        self.assertIn("non-finite", why)

    def test_ucx_no_result_line(self):
        value, why = compare.parse_ucx_perftest(UCX_FAILED, compare.LAT)
        self.assertIsNone(value)
        self.assertIn("no result line", why)

    def test_perftest_latency_is_t_typical(self):
        self.assertEqual(compare.parse_perftest(PT_LAT, compare.LAT, 8), (9.4, None))

    def test_perftest_bandwidth_is_bw_average(self):
        self.assertEqual(compare.parse_perftest(PT_BW, compare.BW, 65536), (9.77, None))

    def test_perftest_size_must_match(self):
        self.assertIsNone(compare.parse_perftest(PT_BW, compare.BW, 1048576)[0])

    def test_perftest_clock_calibration_failure_is_named(self):
        value, why = compare.parse_perftest(PT_LAT_UNCALIBRATED, compare.LAT, 8)
        self.assertIsNone(value)
        self.assertIn("calibrate", why)

    def test_error_line_is_the_reason(self):
        self.assertIn("no transport gdr_rc", compare.last_error_line(UCX_FAILED))


def row(section, test, size, metric, transport, value, reason=None):
    return dict(section=section, test=test, size=size, metric=metric, transport=transport,
                value=value, status="ok" if value is not None else "n/a", reason=reason)


class Comparison(unittest.TestCase):
    def test_ratios_and_raw_peers(self):
        B, L = compare.BW, compare.LAT
        rows = [row("uct", "put_bw", 65536, B, "rc_verbs", 40.0),
                row("uct", "put_bw", 65536, B, "gdr_rc", 50.0),
                row("uct", "put_lat", 8, L, "rc_verbs", 12.0),
                row("uct", "put_lat", 8, L, "gdr_rc", None, "GDR_PLUGIN not set"),
                row("raw", "ib_write_bw", 65536, B, "verbs", 80.0),
                row("raw", "ib_write_lat", 8, L, "verbs", 10.0)]
        table = {(t["test"], t["size"]): t for t in compare.comparison_rows(rows)}
        bw = table[("put_bw", 65536)]
        self.assertAlmostEqual(bw["gdr_over_rc"], 1.25)
        self.assertAlmostEqual(bw["rc_over_raw"], 0.5)
        self.assertAlmostEqual(bw["gdr_over_raw"], 0.625)
        lat = table[("put_lat", 8)]
        self.assertAlmostEqual(lat["rc_over_raw"], 1.2)
        self.assertIsNone(lat["gdr_over_rc"])  # n/a stays n/a: no ratio is made up
        self.assertNotIn(("ib_write_bw", 65536), table)  # raw rows are peers, not comparison rows


class ToolParsers(unittest.TestCase):
    """gdr_perftest and coll_bench: the numbers that are compared, and their units."""

    def test_gdr_perftest_latency_is_the_median_half_round_trip(self):
        tables = compare.parse_gdr_perftest(GP_TAG_LAT)
        self.assertEqual(compare.gdr_perftest_value(tables, "tag_lat", 8, compare.LAT), (2045.58, None))

    def test_gdr_perftest_bandwidth_is_in_mib_per_second(self):
        value, why = compare.gdr_perftest_value(compare.parse_gdr_perftest(GP_PUT_BW), "put_bw", compare.MiB,
                                                compare.BW)
        self.assertIsNone(why)
        # 1 MiB per 100086.70 us = 9.991 MiB/s (2^20), not the 10.48 "MB/s" of 10^6 bytes
        self.assertAlmostEqual(value, 1e6 / 100086.70, places=6)
        # the same elapsed time as the printed GB/s (10^9 B/s), within its 4 decimals
        self.assertAlmostEqual(value, compare.mibps_of_gbps(0.0105), delta=0.05e-3 * 1e9 / compare.MiB)

    def test_gdr_perftest_collective_time_per_call(self):
        tables = compare.parse_gdr_perftest(GP_COLL)
        self.assertEqual(sorted(tables), ["allgather", "alltoall"])
        self.assertEqual(compare.gdr_perftest_value(tables, "allgather", 65536, compare.TIME), (2249.24, None))
        self.assertEqual(compare.gdr_perftest_value(tables, "alltoall", 16, compare.TIME), (108.87, None))

    def test_gdr_perftest_failed_check_is_na(self):
        value, why = compare.gdr_perftest_value(compare.parse_gdr_perftest(GP_COLL), "alltoall", 4096, compare.TIME)
        self.assertIsNone(value)
        self.assertIn("verification WRONG", why)

    def test_gdr_perftest_missing_size_or_test_is_na(self):
        tables = compare.parse_gdr_perftest(GP_COLL)
        self.assertIn("no alltoall result line for size 65536", compare.gdr_perftest_value(
            tables, "alltoall", 65536, compare.TIME)[1])
        self.assertIsNone(compare.gdr_perftest_value(tables, "bcast", 16, compare.TIME)[0])
        self.assertEqual(compare.parse_gdr_perftest(UCX_FAILED), {})

    def test_coll_bench_rows(self):
        op, ranks, rows = compare.parse_coll_bench(CB_ALLTOALL)
        self.assertEqual((op, ranks), ("alltoall", 2))
        self.assertEqual(sorted(rows), [8, 32, 2048, 32768])
        self.assertEqual(compare.coll_bench_value(rows, 8, "mpi_us"), (2116.41, None))
        self.assertEqual(compare.coll_bench_value(rows, 8, "ours_us"), (424.06, None))

    def test_coll_bench_check_applies_to_ours_only(self):
        _, _, rows = compare.parse_coll_bench(CB_ALLTOALL)
        self.assertEqual(compare.coll_bench_value(rows, 2048, "mpi_us"), (1470.46, None))
        value, why = compare.coll_bench_value(rows, 2048, "ours_us")
        self.assertIsNone(value)
        self.assertIn("WRONG", why)
        self.assertIn("no result line", compare.coll_bench_value(rows, 128, "mpi_us")[1])

    def test_sizes_follow_nccl_tests(self):
        # coll_bench's per-rank block -> gdr_perftest's -s: x ranks for the gathering collectives
        self.assertEqual(compare.coll_size("allgather", 8, 2), 16)
        self.assertEqual(compare.coll_size("alltoall", 2048, 4), 8192)
        self.assertEqual(compare.coll_size("reduce_scatter", 8, 4), 32)
        self.assertEqual(compare.coll_size("allreduce", 8, 4), 8)
        self.assertEqual(compare.coll_size("bcast", 32768, 2), 32768)

    def test_busbw_matches_the_tools_own(self):
        # gdr_perftest printed busbw 0.0146 for allgather 65536 B in 2249.24 us on 2 ranks
        self.assertAlmostEqual(compare.busbw("allgather", 65536, 2, 2249.24), 0.0146, delta=0.00005)
        # coll_bench alltoall 32768 B per peer, 2 ranks, 8182.71 us: printed 0.004
        self.assertAlmostEqual(compare.busbw("alltoall", compare.coll_size("alltoall", 32768, 2), 2, 8182.71),
                               0.004, delta=0.0005)
        self.assertAlmostEqual(compare.bus_factor("allreduce", 4), 1.5)
        self.assertAlmostEqual(compare.bus_factor("bcast", 4), 1.0)
        self.assertIsNone(compare.busbw("bcast", 8, 2, None))


def trow(section, test, size, metric, transport, value, tool, ranks=2, reason=None):
    r = row(section, test, size, metric, transport, value, reason)
    r.update(tool=tool, ranks=ranks)
    return r


class SectionTables(unittest.TestCase):
    def test_wrapper_ratio_is_wrapper_over_ucx_perftest(self):
        B, L = compare.BW, compare.LAT
        rows = [trow("wrapper", "tag_lat", 8, L, "gdr_rc", 30.0, "gdr_perftest"),
                trow("wrapper", "tag_lat", 8, L, "gdr_rc", 40.0, "ucx_perftest"),
                trow("wrapper", "put_bw", compare.MiB, B, "gdr_rc", 12.0, "gdr_perftest"),
                trow("wrapper", "put_bw", compare.MiB, B, "gdr_rc", 10.0, "ucx_perftest"),
                trow("wrapper", "put_bw", compare.MiB, B, "rc_verbs", None, "gdr_perftest", reason="not built"),
                trow("wrapper", "put_bw", compare.MiB, B, "rc_verbs", 10.0, "ucx_perftest")]
        table = {(t["test"], t["transport"]): t for t in compare.wrapper_rows(rows)}
        self.assertEqual(len(table), 3)
        self.assertAlmostEqual(table[("tag_lat", "gdr_rc")]["wrapper_over_ucx"], 0.75)
        self.assertAlmostEqual(table[("put_bw", "gdr_rc")]["wrapper_over_ucx"], 1.2)
        self.assertEqual(table[("put_bw", "gdr_rc")]["ucx_test"], "ucp_put_bw")
        self.assertIsNone(table[("put_bw", "rc_verbs")]["wrapper_over_ucx"])
        self.assertEqual(compare.comparison_rows(rows), [])  # not in the transport table

    def test_coll_ratios_per_ranks_and_size(self):
        T, G = compare.TIME, compare.BUSBW
        rows = []
        for ranks, ours, mpi, cb in ((2, 100.0, 200.0, 150.0), (4, 300.0, 200.0, None)):
            size = compare.coll_size("allgather", 8, ranks)
            rows += [trow("coll", "allgather", size, T, "gdr_rc", ours, "gdr_perftest", ranks),
                     trow("coll", "allgather", size, G, "gdr_rc", compare.busbw("allgather", size, ranks, ours),
                          "gdr_perftest", ranks),
                     trow("coll", "allgather", size, T, "gdr_rc", mpi, "mpi", ranks),
                     trow("coll", "allgather", size, G, "gdr_rc", compare.busbw("allgather", size, ranks, mpi),
                          "mpi", ranks),
                     trow("coll", "allgather", size, T, "gdr_rc", cb, "coll_bench", ranks,
                          reason=None if cb else "timed out")]
        table = {t["ranks"]: t for t in compare.coll_rows(rows)}
        self.assertEqual(sorted(table), [2, 4])
        self.assertAlmostEqual(table[2]["time_ratio"], 0.5)  # ours twice as fast
        self.assertAlmostEqual(table[2]["busbw_ratio"], 2.0)
        self.assertAlmostEqual(table[2]["coll_bench_over_mpi"], 0.75)
        self.assertEqual((table[4]["size"], table[4]["block"]), (32, 8))
        self.assertAlmostEqual(table[4]["time_ratio"], 1.5)
        self.assertIsNone(table[4]["coll_bench_over_mpi"])
        self.assertEqual(compare.comparison_rows(rows), [])

    def test_report_prints_the_section_tables(self):
        import contextlib
        import io
        rows = [trow("wrapper", "tag_lat", 8, compare.LAT, "gdr_rc", 30.0, "gdr_perftest"),
                trow("wrapper", "tag_lat", 8, compare.LAT, "gdr_rc", None, "ucx_perftest", reason="boom")]
        meta = dict(device="rxe0:1", gid_index=1, ucx_version="1.13.1", kernel="k", in_rxe_vm=True)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            compare.print_report(dict(meta=meta, rows=rows))
        self.assertIn("wrapper/ucx", out.getvalue())
        self.assertIn("n/a [1]", out.getvalue())
        self.assertIn("[1] boom", out.getvalue())
        self.assertNotIn("rc_verbs  gdr_rc", out.getvalue())  # no empty transport table


class ToolDiscovery(unittest.TestCase):
    def test_next_to_the_plugin_else_not_built(self):
        build = tempfile.mkdtemp()
        os.makedirs(os.path.join(build, "lib"))
        plugin = os.path.join(build, "lib", "libuct_gdr.so")
        rel = ("perf", "gdr_perftest", "gdr_perftest")
        old_path = os.environ.get("PATH", "")
        os.environ["PATH"] = build  # nothing of that name on PATH
        try:
            path, why = compare.find_tool(None, plugin, rel, "--gdr-perftest")
            self.assertIsNone(path)
            self.assertIn("gdr_perftest not built", why)
            tool = os.path.join(build, *rel)
            os.makedirs(os.path.dirname(tool))
            with open(tool, "w") as f:
                f.write("#!/bin/sh\n")
            os.chmod(tool, 0o755)
            self.assertEqual(compare.find_tool(None, plugin, rel, "--gdr-perftest"), (tool, None))
            path, why = compare.find_tool("/nonexistent/gdr_perftest", plugin, rel, "--gdr-perftest")
            self.assertIsNone(path)
            self.assertIn("--gdr-perftest /nonexistent/gdr_perftest", why)
        finally:
            os.environ["PATH"] = old_path

    def test_ours_fail_only_with_require_gdr(self):
        self.assertTrue(compare.ours(trow("coll", "bcast", 8, compare.TIME, "rc_verbs", None, "mpi")))
        self.assertTrue(compare.ours(row("ucp", "tag_bw", 8, compare.BW, "gdr_rc", None)))
        self.assertFalse(compare.ours(row("ucp", "tag_bw", 8, compare.BW, "rc_verbs", None)))


class Repetitions(unittest.TestCase):
    def bench(self, repeat):
        b = compare.Benchmark.__new__(compare.Benchmark)  # no device needed for measure()
        b.repeat, b.rows = repeat, []
        return b

    def test_median_of_repetitions(self):
        b = self.bench(3)
        values = iter([5.0, 1.0, 3.0])
        b.measure("uct", "put_bw", 65536, compare.BW, "rc_verbs", "x", lambda log: (next(values), None, 1.0))
        self.assertEqual(b.rows[0]["value"], 3.0)
        self.assertEqual(b.rows[0]["samples"], [5.0, 1.0, 3.0])

    def test_failed_repetition_is_named_never_averaged(self):
        b = self.bench(3)
        results = iter([(4.0, None, 1.0), (None, "client timed out after 90 s", 90.0), (6.0, None, 1.0)])
        b.measure("uct", "put_bw", 65536, compare.BW, "gdr_rc", "x", lambda log: next(results))
        self.assertEqual(b.rows[0]["value"], 5.0)
        self.assertIn("1 of 3 repetitions failed: client timed out", b.rows[0]["reason"])

    def test_measure_set_medians_per_row(self):
        b = self.bench(3)
        specs = [dict(section="coll", test="bcast", size=8, metric=compare.TIME, transport="gdr_rc",
                      tool="mpi", ranks=2),
                 dict(section="coll", test="bcast", size=8, metric=compare.TIME, transport="gdr_rc",
                      tool="coll_bench", ranks=2)]
        launches = iter([([(5.0, None), (7.0, None)], 2.0),
                         ([(1.0, None), (None, "check WRONG")], 2.0),
                         ([(3.0, None), (9.0, None)], 2.0)])
        b.measure_set(specs, "x", lambda log: next(launches))
        self.assertEqual([r["value"] for r in b.rows], [3.0, 8.0])
        self.assertEqual(b.rows[0]["samples"], [5.0, 1.0, 3.0])
        self.assertIn("1 of 3 repetitions failed: check WRONG", b.rows[1]["reason"])
        self.assertEqual((b.rows[1]["tool"], b.rows[1]["ranks"], b.rows[1]["wall_s"]), ("coll_bench", 2, 6.0))

    def test_all_failed_is_na(self):
        b = self.bench(2)
        b.measure("uct", "put_bw", 65536, compare.BW, "gdr_rc", "x", lambda log: (None, "boom", 0.5))
        self.assertIsNone(b.rows[0]["value"])
        self.assertEqual(b.rows[0]["status"], "n/a")
        self.assertEqual(b.rows[0]["reason"], "boom")


class PairRunner(unittest.TestCase):
    def setUp(self):
        self.logs = tempfile.mkdtemp()

    def free_port(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    def test_tcp_listening_reads_proc(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            self.assertFalse(compare.tcp_listening(port))
            s.listen()
            self.assertTrue(compare.tcp_listening(port))

    def test_server_that_never_listens_does_not_hang(self):
        port = self.free_port()
        t0 = time.monotonic()
        ok, _, _, why, _ = compare.run_pair("silent", [sys.executable, "-c", "import time; time.sleep(60)"],
                                            ["true"], dict(os.environ), port, 2, self.logs)
        self.assertFalse(ok)
        self.assertIn("listen", why)  # "did not listen" or "exited before listening"
        self.assertLess(time.monotonic() - t0, 15)

    def test_failing_client_ends_a_waiting_server(self):
        port = self.free_port()
        server = [sys.executable, "-c",
                  f"import socket, time; s = socket.socket(); s.bind(('127.0.0.1', {port})); "
                  "s.listen(); time.sleep(60)"]
        client = [sys.executable, "-c", "import sys; print('UCX ERROR transport gdr_rc not found'); sys.exit(1)"]
        t0 = time.monotonic()
        ok, cout, _, why, _ = compare.run_pair("client-fails", server, client, dict(os.environ), port, 60,
                                               self.logs)
        self.assertFalse(ok)
        self.assertIn("gdr_rc not found", why)
        self.assertLess(time.monotonic() - t0, 20)
        self.assertTrue(os.path.exists(os.path.join(self.logs, "client-fails.server.log")))

    def test_successful_pair(self):
        port = self.free_port()
        server = [sys.executable, "-c",
                  f"import socket; s = socket.socket(); s.bind(('127.0.0.1', {port})); s.listen(); "
                  "c, _ = s.accept(); c.recv(10)"]
        client = [sys.executable, "-c",
                  f"import socket; s = socket.create_connection(('127.0.0.1', {port})); s.send(b'x'); print('1,2')"]
        ok, cout, _, why, _ = compare.run_pair("good", server, client, dict(os.environ), port, 30, self.logs)
        self.assertTrue(ok, why)
        self.assertIn("1,2", cout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
