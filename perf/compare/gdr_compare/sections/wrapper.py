"""wrapper: gdr_perftest (ucp_cpp) next to ucx_perftest's UCP test of the same operation, same
UCX_TLS, sizes and iterations; the two tools interleaved pair by pair (Results.interleave)."""

from ..launch import run_single
from ..measure import single
from ..parsers import gdr_perftest_value, parse_gdr_perftest
from ..plan import UCP_TLS, WRAPPER_TESTS, section_transports
from ..tools import missing_ucx_tools
from .ucx import ucx_once


# gdr_perftest as ucx_perftest runs: without peer error handling (ucx_perftest's default mode,
# which also decides UCP's lanes and protocols), bandwidth timed by the sender until its endpoint
# is flushed.
AS_UCX_PERFTEST = ["--err-mode", "none", "--bw-timing", "sender"]


def gdr_p2p_once(s, test, size, metric, env, n, w):
    """gdr_perftest starts both ranks itself (-N 2) and meets them on a fresh port."""
    def once(log_name):
        port = s.ports.take()
        cmd = [s.gdr_perftest, "-N", "2", "-p", str(port), "-t", test, "-s", str(size),
               "-n", str(n), "-w", str(w), "--timeout", str(s.timeout)] + AS_UCX_PERFTEST
        ok, out, reason, wall = run_single(log_name, cmd, env, s.timeout + 30, s.logdir)
        value = None
        if ok:
            value, reason = gdr_perftest_value(parse_gdr_perftest(out), test, size, metric)
        return value, reason, wall
    return once


def run_wrapper(s):
    for test, ucx_test, size, metric, quick in WRAPPER_TESTS:
        if (s.args.quick and not quick) or not s.wanted(test):
            continue
        n, w = s.iters.of(metric, size)
        for transport in section_transports(s.args.quick):
            env = s.base_env(transport)
            env["UCX_TLS"] = UCP_TLS[transport]
            gdr = transport == "gdr_rc" and s.gdr_unavailable
            key = dict(section="wrapper", test=test, size=size, metric=metric,
                       transport=transport)
            ours, ucx = dict(key, tool="gdr_perftest"), dict(key, tool="ucx_perftest")
            args = ["-t", ucx_test, "-s", str(size), "-n", str(n), "-w", str(w)]
            sides = [(ours, s.gdr_perftest_missing or gdr,
                      single(ours, f"wrapper-{transport}-gdr_perftest-{test}-{size}",
                             gdr_p2p_once(s, test, size, metric, env, n, w))),
                     (ucx, missing_ucx_tools() or gdr,
                      single(ucx, f"wrapper-{transport}-ucx_perftest-{ucx_test}-{size}",
                             ucx_once(s, args, metric, env)))]
            for spec, why, _ in sides:
                if why:
                    s.results.unmeasured([spec], why)
            launches = [launch for _, why, launch in sides if not why]
            ratios = [("gdr_perftest/ucx_perftest", ours, ucx)] if len(launches) == 2 else []
            if launches:
                s.results.interleave(launches, ratios)
