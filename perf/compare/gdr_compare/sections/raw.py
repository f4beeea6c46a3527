"""raw: perftest's ib_write_lat / ib_write_bw / ib_read_bw, plain verbs, on the GID gdr_rc
uses."""

import shutil

from ..launch import run_pair
from ..parsers import PERFTEST_CLOCK_FAILURE, parse_perftest
from ..plan import RAW_TESTS
from ..units import size_label


def raw_once(s, tool, size, metric):
    n, _ = s.iters.of(metric, size)

    def once(log_name):
        # perftest's clock calibration fails now and then under load: try a failed one again
        for attempt in range(1, 4):
            port = s.ports.take()
            common = [tool, "-d", s.port.device, "-i", str(s.port.port), "-s", str(size),
                      "-n", str(n), "-p", str(port), "-F"]
            if s.port.perftest_gid is not None:
                common += ["-x", str(s.port.perftest_gid)]
            ok, cout, sout, reason, wall = run_pair(log_name, common, common + ["127.0.0.1"],
                                                    s.base_env("rc_verbs"), port, s.timeout,
                                                    s.logdir)
            value = None
            if ok:
                value, reason = parse_perftest(cout, metric, size)
            if value is not None or PERFTEST_CLOCK_FAILURE not in cout + sout:
                break
            print(f"  raw {tool} {size_label(size)}: {reason}; attempt {attempt + 1}", flush=True)
        return value, reason, wall
    return once


def run_raw(s):
    for tool, size, metric in RAW_TESTS:
        if not shutil.which(tool):
            s.results.record("raw", tool, size, metric, "verbs", None,
                             f"{tool} not installed (perftest)", 0, None)
            continue
        s.results.measure("raw", tool, size, metric, "verbs", f"raw-{tool}-{size}",
                          raw_once(s, tool, size, metric))
