"""uct and ucp: ucx_perftest's UCT and UCP tests, rc_verbs and gdr_rc interleaved pair by pair
(measure.Results.interleave); a UCT test with a raw verbs equivalent has perftest's run in the
same pairs when the raw section is part of the run."""

from ..launch import run_pair
from ..measure import single
from ..parsers import parse_ucx_perftest
from ..plan import DEMO_WALL, MR_WINDOW, TRANSPORTS, UCP_TESTS, UCP_TLS, UCT_TESTS
from ..tools import missing_ucx_tools, ucx_perftest
from ..units import MR
from .raw import raw_peer


def ucx_once(s, client_args, metric, env):
    """One ucx_perftest pair on a fresh port: once(log_name) -> (value, reason, wall)."""
    def once(log_name):
        port = s.ports.take()
        server = [*ucx_perftest(), "-p", str(port)]
        client = [*ucx_perftest(), s.server_addr, "-p", str(port), "-v", "-f"] + client_args
        ok, cout, _, reason, wall = run_pair(log_name, server, client, env, port, s.timeout,
                                             s.logdir, remote=s.remote)
        # a client ended after its result line (a server that hung on, a client that stalled
        # in its teardown) still measured: its result is kept
        value, why = parse_ucx_perftest(cout, metric)
        if ok or value is not None:
            reason = why
        return value, reason, wall
    return once


def in_demo(s, section, test, size):
    """--demo runs only its rows of the uct and ucp sections (plan.DEMO_WALL)."""
    demo = getattr(getattr(s, "args", None), "demo", False)
    return not demo or (section, test, size) in DEMO_WALL


def unavailable(s, transport):
    return missing_ucx_tools() or (transport == "gdr_rc" and s.gdr_unavailable)


def compare_transports(s, section, test, size, metric, launch_of, extra=None):
    """rc_verbs and gdr_rc (and `extra`, a (label, spec, launch) third side compared with both)
    interleaved; a transport that cannot run is recorded n/a and the others still run."""
    launches, specs = [], {}
    for transport in TRANSPORTS:
        spec = dict(section=section, test=test, size=size, metric=metric, transport=transport)
        why = unavailable(s, transport)
        if why:
            s.results.unmeasured([spec], why)
            continue
        specs[transport] = spec
        launches.append(single(spec, f"{section}-{transport}-{test}-{size}",
                               launch_of(transport)))
    ratios = []
    if len(specs) == 2:
        ratios.append(("gdr_rc/rc_verbs", specs["gdr_rc"], specs["rc_verbs"]))
    if extra and launches:
        label, spec, launch = extra
        launches.append(launch)
        ratios += [(f"{t}/{label}", specs[t], spec) for t in TRANSPORTS if t in specs]
    if launches:
        s.results.interleave(launches, ratios)


def run_uct(s):
    for test, size, layout, metric in UCT_TESTS:
        if not s.wanted(test) or not in_demo(s, "uct", test, size):
            continue
        n, w = s.iters.of(metric, size)
        args = ["-d", s.net_device, "-t", test, "-s", str(size), "-D", layout, "-n", str(n),
                "-w", str(w)] + (["-O", str(MR_WINDOW)] if metric == MR else [])
        compare_transports(
            s, "uct", test, size, metric,
            lambda t: ucx_once(s, args + ["-x", t], metric, s.base_env(t)),
            raw_peer(s, test, size, metric) if "raw" in s.sections else None)


def run_ucp(s):
    for test, size, metric in UCP_TESTS:
        if not s.wanted(test) or not in_demo(s, "ucp", test, size):
            continue
        n, w = s.iters.of(metric, size)
        args = ["-t", test, "-s", str(size), "-n", str(n), "-w", str(w)]

        def env(transport):
            e = s.base_env(transport)
            e["UCX_TLS"] = UCP_TLS[transport]
            return e
        compare_transports(s, "ucp", test, size, metric,
                           lambda t: ucx_once(s, args, metric, env(t)),
                           tcp_side(s, "ucp", test, size, metric, args))


def tcp_side(s, section, test, size, metric, args):
    """Across a wire (--peer), UCP over tcp on the RoCE port's own network interface: the third
    side of a ucp row, (label, spec, launch), or None (one host, or no interface known)."""
    if s.remote is None or not s.tcp_device:
        return None
    spec = dict(section=section, test=test, size=size, metric=metric, transport="tcp")
    env = s.base_env("tcp")
    env.update(UCX_TLS="tcp", UCX_NET_DEVICES=s.tcp_device)
    return "tcp", spec, single(spec, f"{section}-tcp-{test}-{size}",
                               ucx_once(s, args, metric, env))
