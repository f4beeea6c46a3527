#!/usr/bin/python3
"""Host tests of perf/compare/run: output parsers (on outputs captured from ucx_perftest 1.13.1 and
perftest 4.5 in the Soft-RoCE VM), the comparison table, and the pair runner's guarantees (a server
that never listens, or a client that fails, ends the pair promptly instead of hanging it)."""
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
