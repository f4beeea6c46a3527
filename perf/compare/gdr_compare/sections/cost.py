"""cost: exact work per UCT/UCP operation (issue 14), counted by valgrind's callgrind, not timed.

The guest has no PMU and wall clock under TCG swings run to run, but the instructions executed
inside an operation function are deterministic (../../../shared/notes/cost.md).  Per row and
transport the client of a ucx_perftest pair runs under callgrind with --toggle-collect=<the
transport's op function> (only that function and its callees are counted) and
--dump-before=<the same function>: callgrind writes one profile per call, so every call's cost
is known on its own.  A run makes 2N operations and a row is the mean of the last N: the first
operations also pay one-time work inside the op function (rc_verbs' put_bcopy grows its
send-descriptor pool: ucs_mpool_grow, 164 instructions per operation at n=200 when not left
out).  This is the difference of an n and a 2n run (the method before) in one run: a run
costs a minute of valgrind start-up under TCG whatever n is.

What a row covers: the posting side of one operation (the op function and everything it calls:
UCX core, transport, verbs provider, libc).  Completion handling in iface_progress and the
receiver are not in these rows (docs/perf-compare.md, "cost": what is left)."""

import collections
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import tempfile

from ..callgrind import object_class, parse, split_by_class
from ..launch import run_pair
from ..plan import UCP_TLS
from ..tools import missing_ucx_tools
from ..units import KiB, MiB
from . import registration


class Row(collections.namedtuple("Row", "name test layout size functions args env method api")):
    """One row: ucx_perftest's test, data layout (None: the test has none) and size, the op
    function per transport that --toggle-collect counts, more perftest arguments and
    environment, how a per-operation value is made (DIFFERENCE, FIRST_CALL or PROGRESS) and
    the API (UCT: `-x <transport>`; UCP: UCX_TLS)."""


DIFFERENCE, FIRST_CALL, PROGRESS = "difference", "first_call", "progress"


def row(name, test, layout, size, rc_verbs, gdr_rc=None, args=(), env=None, method=DIFFERENCE,
        api="uct"):
    return Row(name, test, layout, size, {"rc_verbs": rc_verbs, "gdr_rc": gdr_rc or rc_verbs},
               tuple(args), env or {}, method, api)


# ucx_perftest's "get" and "fadd" are UCX 1.13's only UCT get and fetch-add tests, and they are
# streams: -O 1 keeps one operation outstanding, so the op function never returns NO_RESOURCE
# and every call counted is one operation.
ONE_OUTSTANDING = ("-O", "1")
# am_zcopy at 64 KiB needs a 64 KiB AM segment on both transports (default 8 KiB); a short
# receive queue keeps its receive buffers within the VM's memory.
AM_64K = {"UCX_RC_VERBS_SEG_SIZE": "67584", "UCX_RC_VERBS_RX_QUEUE_LEN": "128",
          "UCX_GDR_SEG_SIZE": "67584", "UCX_GDR_RX_QUEUE_LEN": "128"}
COST_ROWS = [
    row("put_short", "put_lat", "short", 8, "uct_rc_verbs_ep_put_short", "gdr_ep_put_short"),
    row("am_short", "am_lat", "short", 8, "uct_rc_verbs_ep_am_short", "gdr_ep_am_short"),
    row("put_bcopy", "put_lat", "bcopy", KiB, "uct_rc_verbs_ep_put_bcopy", "gdr_ep_put_bcopy"),
    row("am_bcopy", "am_lat", "bcopy", KiB, "uct_rc_verbs_ep_am_bcopy", "gdr_ep_am_bcopy"),
    row("put_zcopy", "put_lat", "zcopy", 64 * KiB, "uct_rc_verbs_ep_put_zcopy",
        "gdr_ep_put_zcopy"),
    row("am_zcopy", "am_lat", "zcopy", 64 * KiB, "uct_rc_verbs_ep_am_zcopy", "gdr_ep_am_zcopy",
        env=AM_64K),
    row("get_bcopy", "get", "bcopy", KiB, "uct_rc_verbs_ep_get_bcopy", "gdr_ep_get_bcopy",
        args=ONE_OUTSTANDING),
    row("get_zcopy", "get", "zcopy", 64 * KiB, "uct_rc_verbs_ep_get_zcopy", "gdr_ep_get_zcopy",
        args=ONE_OUTSTANDING),
    row("fetch_add64", "fadd", None, 8, "uct_rc_verbs_ep_atomic64_fetch",
        "gdr_ep_atomic64_fetch", args=ONE_OUTSTANDING),
    # ucx_perftest flushes once, at the end of a run, through the iface's flush, which flushes
    # the one ep (gdr_rc's compiler inlines gdr_ep_flush there: no call of it to count), and
    # calls it again until it is done, a timing-dependent number of times: the row is the first
    # call, the one that starts the flush
    row("ep_flush", "put_lat", "short", 8, "uct_rc_iface_flush", "gdr_iface_flush",
        method=FIRST_CALL),
    # iface_progress with nothing to do: the client of put_lat 8 B spins in progress while it
    # waits for the reply; its function is found in the profile (rc_verbs' is static, nameless)
    row("iface_progress", "put_lat", "short", 8, None, method=PROGRESS),
    # UCP: the same UCP function for both, UCX_TLS picks the transport; the row is what the
    # call costs the sender (for rendezvous: the RTS; the data moves later, in progress)
    row("ucp_tag_eager", "tag_lat", None, 8, "ucp_tag_send_nbx", api="ucp"),
    row("ucp_tag_rndv", "tag_lat", None, MiB, "ucp_tag_send_nbx", api="ucp"),
    row("ucp_put", "ucp_put_lat", None, 8, "ucp_put_nbx", api="ucp"),
]
ROW_NAMES = tuple(r.name for r in COST_ROWS)
N = 100  # a run makes 2N operations; a row is the mean of the last N

# Calls counted inside the windows.  The verbs calls are inline in <infiniband/verbs.h>: they
# are the provider's own (static, stripped) functions, named by offset; provider_ops names them.
VERBS_CALLS = {"post_send_per_op": ("post_send",),
               "post_recv_per_op": ("post_recv", "post_srq_recv"),
               "poll_cq_per_op": ("poll_cq",)}
# libc's system call wrappers that a verbs provider uses (doorbells, commands, events)
SYSCALLS = (r"write|read|ioctl|writev|readv|poll|epoll_wait|syscall|sendmsg|recvmsg",
            r".*/libc[.-][^/]*")
INSTR, SPLIT_PREFIX = "instr_per_op", "split_"
NOT_IN_PROGRESS_ROW = ("iface_progress: only instructions per call (a whole-program profile "
                       "does not tell the progress function's own calls apart)")
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


def perftest_args(r, transport, size):
    """ucx_perftest's client arguments of row r, after the server's address."""
    args = ["-t", r.test, "-s", str(size)]
    if r.api == "uct":
        args += ["-x", transport] + (["-D", r.layout] if r.layout else [])
    return args + list(r.args) + ["-w", "0"]


def row_env(s, r, transport):
    env = s.base_env(transport)
    env.update(r.env)
    if r.api == "ucp":
        env["UCX_TLS"] = UCP_TLS[transport]
    return env


def dump_files(out):
    """callgrind's dumps of one run in order: OUT.1, OUT.2, ... then OUT (the one at exit)."""
    numbered = glob.glob(glob.escape(out) + ".*")
    numbered = sorted((f for f in numbered if f.rsplit(".", 1)[1].isdigit()),
                      key=lambda f: int(f.rsplit(".", 1)[1]))
    return numbered + ([out] if os.path.exists(out) else [])


def add(a, b):
    return {k: a.get(k, 0) + b.get(k, 0) for k in set(a) | set(b)}


def calls_of_run(dumps, fn):
    """One run's dumps (--dump-before=<op function>: one before each call, one at exit) -> the
    totals of each call, in order, or a reason.  The first dump precedes the first call and
    holds nothing (only the op function is collected); each later one holds exactly one call:
    its instructions and everything it called.  The call edge into the op function itself
    lands in a neighbouring dump at times, so the calls are counted from the whole run."""
    if len(dumps) < 2:
        return None, f"callgrind recorded no call of {fn}"
    edges = sum(d["ops"] for d in dumps)
    calls = dumps[1:]
    if edges != len(calls) or dumps[0][INSTR]:
        return None, (f"callgrind's dumps do not match the calls of {fn} ({len(calls)} dumps, "
                      f"{edges} calls, {dumps[0][INSTR]} instructions before the first)")
    return [{k: v for k, v in c.items() if k != "ops"} for c in calls], None


def per_operation(calls):
    """Each call's totals -> per operation of the last half of them: the first operations also
    pay one-time work inside the op function (rc_verbs' put_bcopy grows its send-descriptor
    pool) -- the difference of an n and a 2n run, taken inside one run."""
    last = calls[len(calls) // 2:]
    if not last:
        return None
    total = {}
    for c in last:
        total = add(total, c)
    return {k: v / len(last) for k, v in total.items()}


def progress_per_call(profile):
    """A whole-program profile of a spinning client -> (per call of the iface's progress function,
    its name) or (None, reason).  UCX's uct_worker_progress() is inline in the caller, so the
    progress function is what the executable calls most in UCX or the transport.  The mean over
    all its calls is the idle cost plus the few calls that found a completion (in put_lat's
    client, a send completion every moderation-th put among thousands of calls): an upper
    bound of the idle cost, and the ratio of the transports' bounds."""
    edges = [(k, v) for k, v in profile.edges.items()
             if object_class(k[0]) == "other" and object_class(k[1]) in ("transport", "ucx_core")]
    if not edges:
        return None, "no call from the executable into UCX in the profile"
    (_, _, fn), (calls, inclusive) = max(edges, key=lambda e: e[1][0])
    per_call = {INSTR: inclusive / calls,
                "poll_cq_per_op": None, "syscalls_per_op": None, "post_send_per_op": None,
                "post_recv_per_op": None}
    return per_call, fn


def profile_row(s, r, transport, provider, name, port):
    """One server/client pair with the client under callgrind, 2N operations, the collection
    dumped before each call of the op function -> (per operation or None, reason, wall)."""
    fn = r.functions[transport]
    # callgrind writes a file per call: on the local disk (the guest's tmpfs), not on the VM's
    # 9p share of the results, where each costs a second under TCG; what is kept goes to logs
    scratch = tempfile.mkdtemp(prefix=f"{name}.")
    try:
        return measure_calls(s, r, transport, provider, name, port, fn, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def measure_calls(s, r, transport, provider, name, port, fn, scratch):
    """profile_row with callgrind's files in `scratch`."""
    out = os.path.join(scratch, "callgrind.out")
    server = ["ucx_perftest", "-p", str(port)]
    window = [f"--toggle-collect={fn}", f"--dump-before={fn}"] if fn else []
    client = ["valgrind", "--tool=callgrind", "--dump-instr=no", "--collect-jumps=no"] + \
        window + [f"--callgrind-out-file={out}", "ucx_perftest", "127.0.0.1", "-p", str(port),
                  "-d", s.net_device] + perftest_args(r, transport, r.size) + ["-n", str(2 * N)]
    ok, _, _, reason, wall = run_pair(name, server, client, row_env(s, r, transport), port,
                                      s.timeout, s.logdir)
    if not ok:
        return None, reason, wall
    if os.path.exists(out):  # the profile at exit: the last call, or the whole program
        shutil.copy(out, os.path.join(s.logdir, f"{name}.callgrind.out"))
    if r.method == PROGRESS:
        with open(out) as fh:
            per_op, fn = progress_per_call(parse(fh.read()))
        if per_op:
            print(f"    {transport} {r.name}: the progress function is {fn}", flush=True)
        return per_op, None if per_op else fn, wall
    dumps = []
    for f in dump_files(out):
        with open(f) as fh:
            dumps.append(totals(parse(fh.read()), fn, provider))
    calls, why = calls_of_run(dumps, fn)
    if calls is None:
        return None, why, wall
    with open(os.path.join(s.logdir, f"{name}.calls"), "w") as f:
        f.write("# instructions of each call of %s, in order\n" % fn)
        f.write("".join("%d\n" % c[INSTR] for c in calls))
    per_op = calls[0] if r.method == FIRST_CALL else per_operation(calls)
    return per_op, None if per_op else f"too few calls of {fn}", wall


def unavailable(s):
    """Why no row can be measured, or None."""
    if not shutil.which("valgrind"):
        return "valgrind not installed (apt-get install valgrind)"
    return missing_ucx_tools() or s.provider_ops_missing


def selected_rows(names):
    """COST_ROWS in their order, only those named (None: all)."""
    return [r for r in COST_ROWS if names is None or r.name in names]


def run_cost(s):
    """Every selected row on both transports; --cost-jobs pairs at a time (counts are exact
    whatever runs next to them: only valgrind's start-up, a minute a pair under TCG, is
    shared out).  The rows are recorded in the table's order once all have run."""
    provider, why_all = {}, unavailable(s)
    if not why_all:
        out = subprocess.run([s.provider_ops, s.port.device], text=True, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=60).stdout
        provider = provider_functions(out)
        print(f"  cost: verbs provider functions {provider}", flush=True)
    jobs = [(r, t) for r in selected_rows(getattr(s.args, "cost_rows", None))
            for t in ("rc_verbs", "gdr_rc")]

    def measure(job, port):
        r, transport = job
        why = why_all or (transport == "gdr_rc" and s.gdr_unavailable)
        if why:
            return None, why, 0.0
        per_op, why, wall = profile_row(s, r, transport, provider, f"cost-{transport}-{r.name}",
                                        port)
        print(f"    {transport} {r.name}: " + (f"{per_op[INSTR]:.2f} instructions per operation"
              if per_op else f"n/a ({why})") + f", {wall:.0f} s", flush=True)
        return per_op, why, wall

    ports = [s.ports.take() for _ in jobs]  # taken here: PortAllocator is not thread-safe
    with concurrent.futures.ThreadPoolExecutor(max(1, getattr(s.args, "cost_jobs", 1))) as pool:
        results = list(pool.map(measure, jobs, ports))
    for (r, transport), (per_op, why, wall) in zip(jobs, results):
        name = f"cost-{transport}-{r.name}"
        for metric in METRICS:
            value = per_op.get(metric) if per_op else None
            s.results.record("cost", r.name, r.size, metric, transport, value,
                             why or (None if value is not None else NOT_IN_PROGRESS_ROW),
                             wall, name, tool="callgrind")
            if per_op and value is None:
                s.results.rows[-1]["by_method"] = True  # n/a in every run: not a failure
        if per_op:
            split = {k[len(SPLIT_PREFIX):]: round(v, 1) for k, v in per_op.items()
                     if k.startswith(SPLIT_PREFIX)}
            s.results.rows[-len(METRICS)]["split"] = split
            print(f"    {transport} {r.name}: instructions by object {split}", flush=True)

    if not getattr(s.args, "cost_rows", None):  # the whole section, not a regression subset
        registration.run_registration(s)  # registration rows (sections/registration.py)

def regressions(rows, names):
    """The cost rows `names` of a results.json's rows where gdr_rc executes more instructions
    per operation than rc_verbs (issue 14, requirement 6), or either side is n/a: a row that
    could not be measured fails too, or a broken measurement would pass.
    -> [(row, rc_verbs value, gdr_rc value, what is wrong)], in the order of `names`."""
    value = {(r["test"], r["transport"]): r for r in rows
             if r["section"] == "cost" and r["metric"] == INSTR}
    bad = []
    for name in names:
        rc, gdr = value.get((name, "rc_verbs")), value.get((name, "gdr_rc"))
        missing = [f"{t}: {x['reason'] if x else 'no row'}" for t, x in
                   (("rc_verbs", rc), ("gdr_rc", gdr)) if not x or x["value"] is None]
        rc_v, gdr_v = rc and rc["value"], gdr and gdr["value"]
        if missing:
            bad.append((name, rc_v, gdr_v, "n/a (" + "; ".join(missing) + ")"))
        elif gdr_v > rc_v:
            bad.append((name, rc_v, gdr_v, f"gdr_rc executes {gdr_v / rc_v:.3f}x rc_verbs' "
                        "instructions"))
    return bad
