"""cost: exact work per UCT operation (issue 14), counted by valgrind's callgrind, not timed.

The guest has no PMU and wall clock under TCG swings run to run, but the instructions executed
inside an operation function are deterministic (../../../shared/notes/cost.md).  Per row and
transport the client of a ucx_perftest latency pair runs under callgrind with --toggle-collect=<the
transport's op function>: only that function and its callees are counted, and callgrind records
how often it was called.  It runs twice, with n and 2n operations, and a row is the difference
of the two over the n extra operations: the first operations also pay one-time work inside the
op function (rc_verbs' put_bcopy grows its send-descriptor pool: ucs_mpool_grow, 164
instructions per operation at n=200 when not cancelled), and callgrind at times counts one call
more of the provider's callees than ran (rc_verbs am_short: 201 calls of write(), 200 runs).

What a row covers: the posting side of one operation (the op function and everything it calls:
UCX core, transport, verbs provider, libc).  Completion handling in iface_progress is not yet in
these rows (docs/perf-compare.md, "cost": what is left)."""

import os
import re
import shutil
import subprocess

from ..callgrind import parse, split_by_class
from ..launch import run_pair
from ..tools import missing_ucx_tools
from ..units import KiB
from . import registration

# (row name, perftest test, data layout, size, {transport: op function})
COST_ROWS = [
    ("put_short", "put_lat", "short", 8,
     {"rc_verbs": "uct_rc_verbs_ep_put_short", "gdr_rc": "gdr_ep_put_short"}),
    ("am_short", "am_lat", "short", 8,
     {"rc_verbs": "uct_rc_verbs_ep_am_short", "gdr_rc": "gdr_ep_am_short"}),
    ("put_bcopy", "put_lat", "bcopy", KiB,
     {"rc_verbs": "uct_rc_verbs_ep_put_bcopy", "gdr_rc": "gdr_ep_put_bcopy"}),
    ("am_bcopy", "am_lat", "bcopy", KiB,
     {"rc_verbs": "uct_rc_verbs_ep_am_bcopy", "gdr_rc": "gdr_ep_am_bcopy"}),
]
ITERATIONS = (100, 200)  # a row is the difference of the two runs

# Calls counted inside the windows.  The verbs calls are inline in <infiniband/verbs.h>: they
# are the provider's own (static, stripped) functions, named by offset; provider_ops names them.
VERBS_CALLS = {"post_send_per_op": ("post_send",),
               "post_recv_per_op": ("post_recv", "post_srq_recv"),
               "poll_cq_per_op": ("poll_cq",)}
# libc's system call wrappers that a verbs provider uses (doorbells, commands, events)
SYSCALLS = (r"write|read|ioctl|writev|readv|poll|epoll_wait|syscall|sendmsg|recvmsg",
            r".*/libc[.-][^/]*")
INSTR, SPLIT_PREFIX = "instr_per_op", "split_"
METRICS = (INSTR, "syscalls_per_op") + tuple(VERBS_CALLS)


def provider_functions(output):
    """provider_ops' lines "<verbs call> <object> 0x<offset>" -> {verbs call: (object, name as
    callgrind writes a function without a symbol)}."""
    functions = {}
    for line in output.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[2].startswith("0x"):
            functions[fields[0]] = (os.path.realpath(fields[1]), "0x%016x" % int(fields[2], 16))
    return functions


def totals(profile, op_function, provider):
    """Everything a row reports, summed over one callgrind profile, with the op's calls."""
    c = {"ops": profile.calls_of(re.escape(op_function)), INSTR: profile.total,
         "syscalls_per_op": profile.calls_of(*SYSCALLS)}
    for metric, names in VERBS_CALLS.items():
        c[metric] = sum(profile.calls_of(re.escape(provider[n][1]), re.escape(provider[n][0]))
                        for n in names if n in provider)
    for cls, ir in split_by_class(profile).items():
        c[SPLIT_PREFIX + cls] = ir
    return c


def per_operation(small, large):
    """Totals of the n and the 2n run -> per operation of the n extra ones (None without)."""
    extra = large["ops"] - small["ops"]
    if extra <= 0:
        return None
    return {k: (large.get(k, 0) - small.get(k, 0)) / extra for k in set(small) | set(large)
            if k != "ops"}


def profile_once(s, transport, test, layout, size, fn, provider, n, name):
    """One server/client pair with the client under callgrind; -> (totals or None, reason,
    wall)."""
    port = s.ports.take()
    out = os.path.join(s.logdir, f"{name}.callgrind.out")
    server = ["ucx_perftest", "-p", str(port)]
    client = ["valgrind", "--tool=callgrind", "--dump-instr=no", "--collect-jumps=no",
              f"--toggle-collect={fn}", f"--callgrind-out-file={out}",
              "ucx_perftest", "127.0.0.1", "-p", str(port), "-d", s.net_device, "-x", transport,
              "-t", test, "-s", str(size), "-D", layout, "-n", str(n), "-w", "0"]
    ok, _, _, reason, wall = run_pair(name, server, client, s.base_env(transport), port,
                                      s.timeout, s.logdir)
    if not ok:
        return None, reason, wall
    with open(out) as f:
        return totals(parse(f.read()), fn, provider), None, wall


def profile_row(s, transport, test, layout, size, fn, provider, name):
    """The n and the 2n run -> (per operation or None, reason, wall)."""
    runs, wall = [], 0.0
    for n in ITERATIONS:
        c, why, w = profile_once(s, transport, test, layout, size, fn, provider, n, f"{name}-n{n}")
        wall += w
        if c is None:
            return None, why, wall
        runs.append(c)
    per_op = per_operation(*runs)
    return per_op, None if per_op else f"callgrind recorded no call of {fn}", wall


def unavailable(s):
    """Why no row can be measured, or None."""
    if not shutil.which("valgrind"):
        return "valgrind not installed (apt-get install valgrind)"
    return missing_ucx_tools() or s.provider_ops_missing


def run_cost(s):
    provider, why_all = {}, unavailable(s)
    if not why_all:
        out = subprocess.run([s.provider_ops, s.port.device], text=True, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=60).stdout
        provider = provider_functions(out)
        print(f"  cost: verbs provider functions {provider}", flush=True)
    for row, test, layout, size, functions in COST_ROWS:
        for transport in ("rc_verbs", "gdr_rc"):
            why = why_all or (transport == "gdr_rc" and s.gdr_unavailable)
            per_op, wall, name = None, 0.0, f"cost-{transport}-{row}"
            if not why:
                per_op, why, wall = profile_row(s, transport, test, layout, size,
                                                functions[transport], provider, name)
            for metric in METRICS:
                s.results.record("cost", row, size, metric, transport,
                                 per_op[metric] if per_op else None, why, wall, name,
                                 tool="callgrind")
            if per_op:
                split = {k[len(SPLIT_PREFIX):]: round(v, 1) for k, v in per_op.items()
                         if k.startswith(SPLIT_PREFIX)}
                s.results.rows[-len(METRICS)]["split"] = split
                print(f"    {transport} {row}: instructions by object {split}", flush=True)
    registration.run_registration(s)  # registration rows (sections/registration.py)
