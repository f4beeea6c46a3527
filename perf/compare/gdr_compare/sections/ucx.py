"""uct and ucp: ucx_perftest server/client pairs over rc_verbs and gdr_rc."""

from ..launch import run_pair
from ..parsers import parse_ucx_perftest
from ..plan import TRANSPORTS, UCP_TESTS, UCP_TLS, UCT_TESTS
from ..tools import missing_ucx_tools


def ucx_once(s, client_args, metric, env):
    """One ucx_perftest pair on a fresh port: once(log_name) -> (value, reason, wall)."""
    def once(log_name):
        port = s.ports.take()
        server = ["ucx_perftest", "-p", str(port)]
        client = ["ucx_perftest", "127.0.0.1", "-p", str(port), "-v", "-f"] + client_args
        ok, cout, _, reason, wall = run_pair(log_name, server, client, env, port, s.timeout,
                                             s.logdir)
        value = None
        if ok:
            value, reason = parse_ucx_perftest(cout, metric)
        return value, reason, wall
    return once


def unavailable(s, transport):
    return missing_ucx_tools() or (transport == "gdr_rc" and s.gdr_unavailable)


def run_uct(s):
    for test, size, layout, metric in UCT_TESTS:
        for transport in TRANSPORTS:
            why = unavailable(s, transport)
            if why:
                s.results.record("uct", test, size, metric, transport, None, why, 0, None)
                continue
            n, w = s.iters.of(metric, size)
            args = ["-d", s.net_device, "-x", transport, "-t", test, "-s", str(size),
                    "-D", layout, "-n", str(n), "-w", str(w)]
            s.results.measure("uct", test, size, metric, transport,
                              f"uct-{transport}-{test}-{size}",
                              ucx_once(s, args, metric, s.base_env(transport)))


def run_ucp(s):
    for test, size, metric in UCP_TESTS:
        for transport in TRANSPORTS:
            why = unavailable(s, transport)
            if why:
                s.results.record("ucp", test, size, metric, transport, None, why, 0, None)
                continue
            env = s.base_env(transport)
            env["UCX_TLS"] = UCP_TLS[transport]
            n, w = s.iters.of(metric, size)
            args = ["-t", test, "-s", str(size), "-n", str(n), "-w", str(w)]
            s.results.measure("ucp", test, size, metric, transport,
                              f"ucp-{transport}-{test}-{size}", ucx_once(s, args, metric, env))
