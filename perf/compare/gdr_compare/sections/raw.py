"""raw: perftest's ib_write_lat / ib_write_bw / ib_read_bw, plain verbs, on the GID gdr_rc
uses.  A raw test that is the equivalent of a UCT test (plan.RAW_PEER) runs inside that test's
interleaved pairs when the uct section is part of the run (raw_peer); this section measures the
rest on their own."""

import shutil

from ..launch import run_pair
from ..measure import single
from ..parsers import PERFTEST_CLOCK_FAILURE, parse_perftest
from ..plan import RAW_PEER, RAW_TESTS
from ..units import BW, LAT, size_label


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
            ok, cout, sout, reason, wall = run_pair(log_name, common,
                                                    common + [s.server_addr],
                                                    s.base_env("rc_verbs"), port, s.timeout,
                                                    s.logdir, remote=s.remote)
            value = None
            if ok:
                value, reason = parse_perftest(cout, metric, size)
            if value is not None or PERFTEST_CLOCK_FAILURE not in cout + sout:
                break
            print(f"  raw {tool} {size_label(size)}: {reason}; attempt {attempt + 1}", flush=True)
        return value, reason, wall
    return once


def raw_spec(tool, size, metric):
    return dict(section="raw", test=tool, size=size, metric=metric, transport="verbs")


def raw_peer(s, test, size, metric):
    """The raw verbs side of a UCT test, (label, spec, launch), or None: no equivalent, the
    same row measured already, or perftest not installed (run_raw then says so)."""
    tool = RAW_PEER.get(test)
    if metric not in (LAT, BW) or not tool or not shutil.which(tool):
        return None
    spec = raw_spec(tool, size, metric)
    if (tool, size, metric) not in RAW_TESTS or s.results.has(**spec):
        return None
    return "raw", spec, single(spec, f"raw-{tool}-{size}", raw_once(s, tool, size, metric))


def run_raw(s):
    for tool, size, metric in RAW_TESTS:
        spec = raw_spec(tool, size, metric)
        if not s.wanted(tool) or s.results.has(**spec):
            continue  # measured in a UCT test's pairs
        if not shutil.which(tool):
            s.results.unmeasured([spec], f"{tool} not installed (perftest)")
            continue
        s.results.interleave([single(spec, f"raw-{tool}-{size}",
                                     raw_once(s, tool, size, metric))])
