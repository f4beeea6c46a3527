"""cost: exact work per UCT/UCP operation, counted by valgrind's callgrind, not timed.

The guest has no PMU and wall clock under TCG swings run to run, but the instructions executed
inside an operation function are deterministic (../../../shared/notes/cost.md).  Per row and
transport the client of a ucx_perftest pair runs under callgrind with --toggle-collect=<the
transport's op function> (only that function and its callees are counted) and
--dump-before=<the same function>: callgrind writes one profile per call, so every call's cost
is known on its own.  A run makes 2N operations and a row is the mean of the last N (but the
very last, whose profile is the one at exit: per_operation): the first
operations also pay one-time work inside the op function (rc_verbs' put_bcopy grows its
send-descriptor pool: ucs_mpool_grow, 164 instructions per operation at n=200 when not left
out).  This is the difference of an n and a 2n run (the method before) in one run: a run
costs a minute of valgrind start-up under TCG whatever n is.

What a row covers: the posting side of one operation (the op function and everything it calls:
UCX core, transport, verbs provider, libc), or, for the recv_* rows, the work one operation
causes in the receiving process's progress: the receiving peer runs under callgrind with its
progress function collected and a dump before each call, so each call's cost is known; the
calls that found nothing (every poll of theirs empty, told by the verbs provider's own
instructions) are left out, the others (a receive, a send completion, a refill) count whole,
and their sum is divided by the operations.  How many empty spins a wait takes depends on
timing; what the calls that found something cost does not.  iface_progress is the cheapest
call of the put_lat client: progress with nothing to do."""

import collections
import concurrent.futures
import fnmatch
import glob
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile

from ..callgrind import function_options, parse, split_by_class
from ..launch import run_pair, run_single
from ..plan import UCP_TLS
from ..tools import missing_ucx_tools, ucx_perftest
from ..units import KiB, MiB
from . import registration


class Row(collections.namedtuple("Row", "name test layout size functions args env method api")):
    """One row: ucx_perftest's test, data layout (None: the test has none) and size, the op
    function per transport that --toggle-collect counts, more perftest arguments and
    environment, how a per-operation value is made (DIFFERENCE, FIRST_CALL, PROGRESS or
    RECEIVER) and the API (UCT: `-x <transport>`; UCP: UCX_TLS).  PROGRESS and RECEIVER rows
    count the progress function and use the op function to tell the operations apart."""


DIFFERENCE, FIRST_CALL, PROGRESS, RECEIVER, PROGRAM = ("difference", "first_call", "progress",
                                                       "receiver", "program")
# what UCP's processes call to progress (a symbol of libucp); UCT's is the iface's own function,
# which perf/cost/progress_fn names
UCP_PROGRESS = "ucp_worker_progress"
# a receiver's work outside progress: UCP's tag_lat posts each receive, which matches a message
# that progress already queued as unexpected, or is matched later in progress
RECEIVE_CALLS = {"tag_lat": "ucp_tag_recv_nbx"}


def row(name, test, layout, size, rc_verbs, gdr_rc=None, args=(), env=None, method=DIFFERENCE,
        api="uct"):
    return Row(name, test, layout, size, {"rc_verbs": rc_verbs, "gdr_rc": gdr_rc or rc_verbs},
               tuple(args), env or {}, method, api)


def receiver(r):
    """The receiving side of sender row r: the server of the same pair, its progress counted."""
    return r._replace(name="recv_" + r.name, method=RECEIVER)


# ucx_perftest's "get" and "fadd" are UCX 1.13's only UCT get and fetch-add tests, and they are
# streams: -O 1 keeps one operation outstanding, so the op function never returns NO_RESOURCE
# and every call counted is one operation.
ONE_OUTSTANDING = ("-O", "1")
# am_zcopy at 64 KiB needs a 64 KiB AM segment on both transports (default 8 KiB); a short
# receive queue keeps its receive buffers within the VM's memory.
AM_64K = {"UCX_RC_VERBS_SEG_SIZE": "67584", "UCX_RC_VERBS_RX_QUEUE_LEN": "128",
          "UCX_GDR_SEG_SIZE": "67584", "UCX_GDR_RX_QUEUE_LEN": "128"}
# gdr_rc with a completion requested for every send (default: every 32nd, TX_MODERATION)
SIGNAL_EVERY_SEND = {"UCX_GDR_TX_MODERATION": "1"}
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
    # calls it again until it is done, a timing-dependent number of times: the row is the call
    # that starts the flush, the first that posts a work request (the first call where none
    # does); whether the first call posts depends on the completions already polled
    row("ep_flush", "put_lat", "short", 8, "uct_rc_iface_flush", "gdr_iface_flush",
        method=FIRST_CALL),
    # The same flush with every gdr_rc send signaled (UCX_GDR_TX_MODERATION=1, rc_verbs' own
    # choice for its sends): gdr_rc's flush posts a signaled NOP only when its last send was
    # unsignaled (moderation, as rc_mlx5 does), so this row posts none; what that costs
    # instead, a send completion per operation, is recv_put_short_every_send_signaled below
    row("ep_flush_every_send_signaled", "put_lat", "short", 8, "uct_rc_iface_flush",
        "gdr_iface_flush", env=SIGNAL_EVERY_SEND, method=FIRST_CALL),
    # iface_progress with nothing to do: the client of put_lat 8 B spins in progress while it
    # waits for the reply, one dump per call; the row is the cheapest call
    row("iface_progress", "put_lat", "short", 8, "uct_rc_verbs_ep_put_short",
        "gdr_ep_put_short", method=PROGRESS),
    # UCP: the same UCP function for both, UCX_TLS picks the transport; the row is what the
    # call costs the sender (for rendezvous: the RTS; the data moves later, in progress)
    row("ucp_tag_eager", "tag_lat", None, 8, "ucp_tag_send_nbx", api="ucp"),
    row("ucp_tag_rndv", "tag_lat", None, MiB, "ucp_tag_send_nbx", api="ucp"),
    row("ucp_put", "ucp_put_lat", None, 8, "ucp_put_nbx", api="ucp"),
    # UCP's fetch-add at 32 and 64 bits (ucx_perftest asks UCP_FEATURE_AMO32 for -s 4, AMO64
    # otherwise): over gdr_rc a device atomic lane at both widths, over rc_verbs UCP's emulation
    # over active messages (docs/atomics.md). The initiator's call only: the emulation's work on
    # the target (its handler, the reply) has no row (its server calls no op function to count by)
    row("ucp_fadd32", "ucp_fadd", None, 4, "ucp_atomic_op_nbx", api="ucp"),
    row("ucp_fadd64", "ucp_fadd", None, 8, "ucp_atomic_op_nbx", api="ucp"),
    # UCP's eager tag send of 64 KiB (below both transports' rendezvous thresholds,
    # docs/perf-compare.md), its matching receive is recv_ucp_tag_64k below; and the
    # non-fetching 64-bit add (ucx_perftest's ucp_add: ucp_atomic_op_nbx without a reply
    # buffer; ucp_fadd64 is the fetching one), one outstanding as fetch_add64's UCT row
    row("ucp_tag_64k", "tag_lat", None, 64 * KiB, "ucp_tag_send_nbx", api="ucp"),
    row("ucp_add64", "ucp_add", None, 8, "ucp_atomic_op_nbx", args=ONE_OUTSTANDING, api="ucp"),
]
# the receiving side, apart from the sender's: put_short's target does
# nothing for an RDMA write (its progress finds only its own reply's completions); the AM and
# tag rows receive, hand the message up and refill the receive queue
COST_ROWS += [receiver(r) for r in COST_ROWS
              if r.name in ("put_short", "am_short", "am_bcopy", "ucp_tag_eager", "ucp_tag_64k")]
# the other side of ep_flush_every_send_signaled: put_lat's server, whose progress now polls a
# completion for each of its replies (rc_verbs' recv_put_short does the same by default)
COST_ROWS += [receiver(row("put_short_every_send_signaled", "put_lat", "short", 8,
                           "uct_rc_verbs_ep_put_short", "gdr_ep_put_short",
                           env=SIGNAL_EVERY_SEND))]


class Program(collections.namedtuple("Program", "launcher binary args ranks expect")):
    """A PROGRAM row's program (the rows above ucx_perftest's reach: UCP and MPI): the launcher
    ("ucp": one process; "ompi": Open MPI's mpirun, pml/osc ucx; "mpich": MPICH's hydra,
    ch4:ucx), the binary (built next to provider_ops: perf/cost/), its arguments, the ranks
    measured, each {rank: (label, (function glob, ...))}: that rank runs under callgrind with
    the functions collected and a dump before each call of the first, so that every operation
    is a profile of its own (the others run natively), and per label the UCP calls (regular
    expressions) that each operation must make, every one: one that did not go through UCP
    (an MPI's shared memory), or a function that callgrind did not collect, must not give a
    row.  One dump function per process: valgrind 3.19's
    callgrind given --toggle-collect and --dump-before for two functions collected nothing in
    the second (Open MPI's PMPI_Send and PMPI_Recv, 2026-12-05; each alone is collected)."""


# the spins of a call that waits (MPI_Recv, a flush) are ucp_worker_progress calls inside it;
# the programs make it find what it waits for at its first poll, and a row keeps the operations
# with the fewest spins (program_per_operation)
SPIN = "ucp_worker_progress"
# one message: rank 0's MPI_Send, rank 1's MPI_Recv of it (perf/cost/mpi_cost.c sendrecv)
MPI_SENDRECV = {0: ("send", ("*MPI_Send",)), 1: ("recv", ("*MPI_Recv",))}
MPI_SENDRECV_UCP = {"send": (r"ucp_tag_send_n.*",), "recv": (r"ucp_tag_recv_n.*",)}
# a put and its flush: the program's wrappers put_op and flush_op are collected (two names
# without a common prefix: given *MPI_Put and *MPI_Win_flush, callgrind collected only the
# flush, 908 instructions and no work request on rc_verbs, 2026-12-05), and both the put and
# the flush must be in each operation
PUT_FLUSH = {0: ("put_flush", ("put_op", "flush_op"))}
PROGRAMS = {
    # ucp_put_nbx of 8 B (put_op), then (after the program's sleep) flush_op: ucp_ep_flush_nbx,
    # the progress until its request completes, ucp_request_free; one process (perf/cost/
    # ucp_put_flush.c)
    "ucp_put_flush": Program("ucp", "ucp_put_flush", (), PUT_FLUSH,
                             {"put_flush": (r"ucp_put_nbx", r"ucp_ep_flush_nbx")}),
    "mpi_ompi_sendrecv": Program("ompi", "mpi_cost", ("sendrecv",), MPI_SENDRECV,
                                 MPI_SENDRECV_UCP),
    "mpi_mpich_sendrecv": Program("mpich", "mpi_cost_mpich", ("sendrecv",), MPI_SENDRECV,
                                  MPI_SENDRECV_UCP),
    # MPI_Put of 8 B + MPI_Win_flush (osc ucx), rank 0 (mpi_cost.c put)
    "mpi_ompi_put_flush": Program("ompi", "mpi_cost", ("put",), PUT_FLUSH,
                                  {"put_flush": (r"ucp_put_n.*", r"ucp_(ep|worker)_flush.*")}),
}
COST_ROWS += [row(name, "program", None, 8, p.ranks[min(p.ranks)][1][0], method=PROGRAM,
                  api="ucp")
              for name, p in PROGRAMS.items()]
ROW_NAMES = tuple(r.name for r in COST_ROWS)
N = 100  # a run makes 2N operations; a row is the mean of the last N

# Calls counted inside the windows.  The verbs calls are inline in <infiniband/verbs.h>: they
# are the provider's own (static, stripped) functions, named by offset; provider_ops names them.
# wr_complete: the ibv_wr_* builders' post (gdr_rc uses them where the provider has them).
VERBS_CALLS = {"post_send_per_op": ("post_send", "wr_complete"),
               "post_recv_per_op": ("post_recv", "post_srq_recv"),
               "poll_cq_per_op": ("poll_cq",)}
# libc's system call wrappers that a verbs provider uses (doorbells, commands, events)
SYSCALLS = (r"write|read|ioctl|writev|readv|poll|epoll_wait|syscall|sendmsg|recvmsg",
            r".*/libc[.-][^/]*")
INSTR, SPLIT_PREFIX, OBJECT_PREFIX, PART_PREFIX = "instr_per_op", "split_", "object_", "part_"
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
    for ob, ir in profile.self_by_object.items():  # the finer split: libucp apart from libucs
        c[OBJECT_PREFIX + os.path.basename(ob or "?")] = c.get(OBJECT_PREFIX + os.path.basename(
            ob or "?"), 0) + ir
    return c


def perftest_args(r, transport, size):
    """ucx_perftest's client arguments of row r, after the server's address."""
    args = ["-t", r.test, "-s", str(size)]
    if r.api == "uct":
        args += ["-x", transport] + (["-D", r.layout] if r.layout else [])
    return args + list(r.args) + ["-w", "0"]


def row_env(s, r, transport):
    env = s.base_env(transport)
    # symbols bound at start-up: a first call (ep_flush's row) does not count the dynamic
    # linker's lazy binding of what it calls (1881 of rc_verbs' 2001 first-call instructions)
    env["LD_BIND_NOW"] = "1"
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


def first_post(calls):
    """The first call that posts a work request, else the first call."""
    return next((c for c in calls if c.get("post_send_per_op")), calls[0])


def per_operation(calls, ops=None):
    """Each call's totals -> per operation of the last half of them: the first operations also
    pay one-time work inside the op function (rc_verbs' put_bcopy grows its send-descriptor
    pool) -- the difference of an n and a 2n run, taken inside one run.  The very last call is
    left out when others remain: its profile is the one callgrind writes at program
    termination, and that one carries call edges collected outside the call (ucp_tag_rndv's:
    27 ioctl() calls under one execute_ioctl on gdr_rc, 19 on rc_verbs, where each call before
    it makes 7 system calls on both).  ops: the operations the run made, when `calls` may lack
    the last (a run ended after the test had finished): the same calls, ops/2 .. ops-2."""
    ops = len(calls) if ops is None else ops
    last = calls[ops // 2:ops]
    if len(last) > 1:
        last = calls[ops // 2:ops - 1]
    if not last:
        return None
    total = {}
    for c in last:
        total = add(total, c)
    return {k: v / len(last) for k, v in total.items()}


def dump_trigger(text):
    """What made callgrind write a dump ("desc: Trigger: ..." in its header)."""
    m = re.search(r"^desc: Trigger: (.*)$", text, re.M)
    return m.group(1) if m else ""


def names(function):
    """A regular expression that finds `function` in a dump's trigger."""
    return re.compile(r"(^|\W)" + re.escape(function) + r"(\W|$)")


def progress_calls(dumps, progress, mark, receive=None):
    """One run's dumps (--dump-before=<progress>, <mark> and <receive>; progress and receive
    collected) as (trigger, totals), in order -> ([(operations before it, is a progress call,
    totals) per call], the operations, None) or (None, None, reason).  A dump holds what ran
    since the previous one: the call that triggered the previous dump, or nothing after a mark
    (the op function, called outside progress): the marks count the operations."""
    is_progress, is_receive = names(progress), receive and names(receive)
    if not dumps or dumps[0][1][INSTR]:
        return None, None, "callgrind collected before the first dump"
    calls, ops = [], 0
    for (trigger, _), (_, content) in zip(dumps, dumps[1:]):
        totals = {k: v for k, v in content.items() if k != "ops"}
        if is_progress.search(trigger):
            calls.append((ops, True, totals))
        elif is_receive and is_receive.search(trigger):
            calls.append((ops, False, totals))
        elif content[INSTR]:
            return None, None, f"{content[INSTR]} instructions after a call of {mark}"
        else:
            ops += 1
    edges, progress_dumps = sum(d["ops"] for _, d in dumps), sum(c[1] for c in calls)
    if not progress_dumps or not ops or edges != progress_dumps:
        return None, None, (f"the dumps do not match the calls ({progress_dumps} dumps of "
                            f"{progress}, {edges} calls of it, {ops} of {mark})")
    return calls, ops, None


def idle_call(calls):
    """The cheapest of the progress calls, one that finds nothing -> (its totals, how many calls
    cost the same)."""
    idle = min(calls, key=lambda c: c[INSTR])
    return idle, sum(c[INSTR] == idle[INSTR] for c in calls)


def empty_poll(calls):
    """The verbs provider's instructions for one poll of an empty CQ: the least provider work
    per poll of the progress calls (an empty poll takes the CQ's lock, finds nothing and
    returns: the same instructions every time, on any CQ of the provider), or None."""
    per_poll = [c.get(SPLIT_PREFIX + "provider", 0) / c["poll_cq_per_op"]
                for c in calls if c.get("poll_cq_per_op")]
    return min(per_poll) if per_poll else None


def found_nothing(c, empty):
    """A progress call whose every poll was empty: its provider work is its polls' and no more
    (a CQE polled, a receive posted or anything else of the provider's costs more)."""
    return c.get(SPLIT_PREFIX + "provider", 0) == c.get("poll_cq_per_op", 0) * empty


def receiver_per_operation(calls, ops):
    """progress_calls' calls of the receiving process -> the work per operation: the progress
    calls that found something and the receive calls, whole, over the last half of the
    operations (the first ones pay one-time work, as on the sender), or None; and (the
    provider's instructions per empty poll, the calls that found nothing, the calls)."""
    half = ops // 2
    window = [(p, c) for before, p, c in calls if before >= half]
    empty = empty_poll([c for _, p, c in calls if p])
    if empty is None or ops - half <= 0 or not window:
        return None, None
    work, idle = {}, 0
    for p, c in window:
        if p and found_nothing(c, empty):
            idle += 1
        else:
            work = add(work, c)
    return ({k: v / (ops - half) for k, v in work.items()}, (empty, idle, len(window)))


def callgrind_window(wanted):
    """callgrind's function options for `wanted`, [(option, function pattern)] in order (option:
    "toggle-collect" or "dump-before"), spelled so that callgrind 3.19 gives every function
    exactly its options -> (arguments, None) or (None, why not).  callgrind keeps the patterns
    in a prefix tree where a second pattern with the same name, after another that shares a
    prefix with it, makes a second leaf that hides the first (callgrind.function_options): a
    later option on a function names it again where that is safe, else with '?' for its first
    character, which callgrind files under another branch of the tree.  The spelling is chosen
    by callgrind's own matching rules before anything runs (a row measured with an option lost
    collected nothing where it should have: recv_ucp_tag_*'s ucp_tag_recv_nbx, 0 instructions
    on every call, until 2026-12-05)."""
    mentions, choices = collections.Counter(), []
    for option, fn in wanted:
        alternatives = [fn]
        if mentions[fn] and fn[0] not in "*?":
            alternatives.append("?" + fn[1:])
        choices.append([f"--{option}={a}" for a in alternatives])
        mentions[fn] += 1
    want = collections.defaultdict(set)
    for option, fn in wanted:
        want[fn].add(option)
    for argv in itertools.product(*choices):
        # a name the pattern matches: '*' as nothing, '?' as one character
        if all(set(function_options(argv, fn.replace("*", "").replace("?", "x"))) == options
               for fn, options in want.items()):
            return list(argv), None
    return None, (f"no spelling of {wanted} gives every function exactly its options in "
                  "callgrind 3.19's matching")


def grind_command(window, out):
    """valgrind's command line for a measured process: callgrind with `window` (the function
    options of callgrind_window), one profile per dump into `out`, `out`.1, ..."""
    # -v: valgrind names each object as it reads it, so a start-up that takes minutes on a
    # loaded TCG guest shows progress (launch.py ends a pair that shows none)
    return (["valgrind", "-v", "--tool=callgrind", "--dump-instr=no", "--collect-jumps=no"] +
            window + [f"--callgrind-out-file={out}"])


def profiles_written(scratch):
    """A progress probe for launch.py: the files callgrind has written into `scratch` (one per
    call of the function dumped before)."""
    return lambda: len(os.listdir(scratch)) if os.path.isdir(scratch) else 0


def run_ops(s):
    """Operations of a ucx_perftest run: --cost-ops (the demo's and CI's 66), else 2N."""
    return str(getattr(s.args, "cost_ops", None) or 2 * N)


def profile_row(s, r, transport, provider, name, port):
    """One server/client pair with the client under callgrind, 2N operations, the collection
    dumped before each call of the op function -> (per operation or None, reason, wall)."""
    fn = r.functions[transport]
    # callgrind writes a file per call: on the local disk (the guest's tmpfs), not on the VM's
    # 9p share of the results, where each costs a second under TCG; what is kept goes to logs
    scratch = tempfile.mkdtemp(prefix=f"{name}.")
    try:
        if r.method == PROGRAM:
            return measure_program(s, r, transport, provider, name, scratch)
        return measure_calls(s, r, transport, provider, name, port, fn, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def measure_calls(s, r, transport, provider, name, port, fn, scratch):
    """profile_row with callgrind's files in `scratch`."""
    out = os.path.join(scratch, "callgrind.out")
    counted = s.progress_fns.get(transport) if r.api == "uct" else UCP_PROGRESS
    if r.method not in (PROGRESS, RECEIVER):
        counted = fn
    elif not counted:
        return None, f"no progress function of {transport} (perf/cost/progress_fn)", 0.0
    wanted = [("toggle-collect", counted), ("dump-before", counted)]
    receive = RECEIVE_CALLS.get(r.test) if r.method == RECEIVER else None
    if counted != fn:  # the op function only marks the operations
        wanted.append(("dump-before", fn))
    if receive:  # work of the receiver outside progress: counted whole, a dump per call
        wanted += [("toggle-collect", receive), ("dump-before", receive)]
    window, why = callgrind_window(wanted)
    if window is None:
        return None, why, 0.0
    grind = grind_command(window, out)
    server = [*ucx_perftest(), "-p", str(port)]
    client = [*ucx_perftest(), "127.0.0.1", "-p", str(port), "-d", s.net_device] + \
        perftest_args(r, transport, r.size) + \
        ["-n", run_ops(s)]
    # the native peer spins while it waits for the one under valgrind, tens of times slower:
    # niced, it leaves the CPUs to the measured one (the counts do not depend on it, the time
    # a pair takes does)
    if r.method == RECEIVER:
        server, client = grind + server, ["nice", "-n", "19"] + client
    else:
        server, client = ["nice", "-n", "19"] + server, grind + client
    # a server under valgrind takes its start-up (a minute under TCG) before it listens, and
    # writes its last profile and ends after the client; a niced native one, on CPUs busy with
    # valgrind, can take minutes to be scheduled and end
    ok, _, _, reason, wall = run_pair(name, server, client, row_env(s, r, transport), port,
                                      s.timeout, s.logdir, listen_s=s.timeout, exit_s=s.timeout,
                                      probe=profiles_written(scratch))
    if not ok:
        return None, reason, wall
    if os.path.exists(out):  # the profile at exit: the last call
        shutil.copy(out, os.path.join(s.logdir, f"{name}.callgrind.out"))
    dumps = []
    for f in dump_files(out):
        with open(f) as fh:
            text = fh.read()
        dumps.append((dump_trigger(text), totals(parse(text), counted, provider)))
    if counted != fn:
        return progress_row(s, r, transport, name, dumps, counted, fn, receive) + (wall,)
    calls, why = calls_of_run([d for _, d in dumps], fn)
    if calls is None:
        return None, why, wall
    write_calls(s, name, fn, calls)
    per_op = first_post(calls) if r.method == FIRST_CALL else per_operation(calls)
    return per_op, None if per_op else f"too few calls of {fn}", wall


def batch_groups(rows):
    """The rows in groups measured by one ucx_perftest process each (-b, its batch mode), in
    the table's order: the UCT rows whose value is the mean of their op function's calls
    (DIFFERENCE) and that run with the same environment share a process; any other row runs
    alone.  Under TCG a pair's minute is nearly all valgrind's and UCX's start-up, which a
    batch pays once (the demo's four rows: two processes instead of eight)."""
    groups, batched = [], {}
    for r in rows:
        if r.method == DIFFERENCE and r.api == "uct":
            key = tuple(sorted(r.env.items()))
            if key in batched:
                batched[key].append(r)
                continue
            batched[key] = [r]
            groups.append(batched[key])
        else:
            groups.append([r])
    return [tuple(g) for g in groups]


def batch_calls(dumps, functions, checked=None):
    """One batch run's dumps, [(trigger, totals, {function: its calls in the dump})] in order
    -> ({function: [totals of each call, in order]}, None) or (None, reason).  As in
    calls_of_run, a dump holds the call that triggered the previous one; a test's first dump
    holds the last call of the test before it.  checked: the functions whose calls must add up
    (default all; a run cut short checks the tests it finished, not the one it was in)."""
    if len(dumps) < 2:
        return None, "callgrind recorded no call"
    if dumps[0][1][INSTR]:
        return None, "callgrind collected before the first dump"
    calls = {fn: [] for fn in functions}
    for (trigger, _, _), (_, content, _) in zip(dumps, dumps[1:]):
        fn = next((f for f in functions if names(f).search(trigger)), None)
        if fn is None:
            return None, f"a dump not before an op function: {trigger!r}"
        calls[fn].append({k: v for k, v in content.items() if k != "ops"})
    for fn in functions if checked is None else checked:
        edges = sum(d[2].get(fn, 0) for d in dumps)
        if edges != len(calls[fn]):
            return None, (f"callgrind's dumps do not match the calls of {fn} "
                          f"({len(calls[fn])} dumps, {edges} calls)")
    return calls, None


TEST_HEADER = re.compile(r"^\+([A-Za-z0-9_]+)-+\+")


def finished_tests(client_output):
    """The tests of a ucx_perftest batch (-b) that printed their "Final:" line: each test's
    table starts with a "+<name>----+" rule."""
    done, current = [], None
    for line in client_output.splitlines():
        m = TEST_HEADER.match(line)
        if m:
            current = m.group(1)
        elif line.startswith("Final:") and current and current not in done:
            done.append(current)
    return done


def batch_results(rows, functions, dumps, ops, finished, why):
    """A batch run's rows from its dumps -> ([(per operation or None, reason)] in the rows'
    order, the calls or None).  finished: None when the run ended well, else the names of the
    tests it finished before it was ended for `why`: those keep their values (a test's calls
    are all in the dumps once the next test began, all but its last once its Final: line is
    printed, and the last is never counted), the others say why they have none."""
    calls, bad = batch_calls(dumps, functions,
                             None if finished is None else
                             [fn for r, fn in zip(rows, functions) if r.name in finished])
    results = []
    for r, fn in zip(rows, functions):
        if finished is not None and r.name not in finished:
            results.append((None, why))
        elif calls is None:
            results.append((None, bad))
        else:
            per_op = per_operation(calls[fn], None if finished is None else ops)
            results.append((per_op, None if per_op else f"too few calls of {fn}"))
    return results, calls


def measure_batch(s, rows, transport, provider, name, port):
    """The rows of one batch group on `transport` in one pair, the client under callgrind with
    each row's op function collected and a dump before each of its calls -> [(per operation or
    None, reason, wall)] in the rows' order (the pair's wall on each).  A pair ended before its
    end keeps the rows of the tests it finished."""
    functions = [r.functions[transport] for r in rows]
    window, why = callgrind_window([("toggle-collect", f) for f in functions] +
                                   [("dump-before", f) for f in functions])
    if window is None:
        return [(None, why, 0.0)] * len(rows)
    scratch = tempfile.mkdtemp(prefix=f"{name}.")
    try:
        out, batch = os.path.join(scratch, "callgrind.out"), os.path.join(scratch, "batch")
        with open(batch, "w") as f:  # "<test name> <its arguments>" a line; both sides read it
            f.write("".join(" ".join([r.name] + perftest_args(r, transport, r.size) +
                                     ["-n", run_ops(s)]) + "\n" for r in rows))
        shutil.copy(batch, os.path.join(s.logdir, f"{name}.batch"))
        # the server checks each batch line itself: from UCX 1.18 a UCT test without -d is refused
        # there ("A device must be specified with -d flag for UCT test")
        server = ["nice", "-n", "19", *ucx_perftest(), "-p", str(port), "-d", s.net_device,
                  "-b", batch]
        client = grind_command(window, out) + [*ucx_perftest(), "127.0.0.1", "-p", str(port),
                                               "-d", s.net_device, "-b", batch]
        ok, cout, _, reason, wall = run_pair(name, server, client,
                                             row_env(s, rows[0], transport), port, s.timeout,
                                             s.logdir, listen_s=s.timeout, exit_s=s.timeout,
                                             probe=profiles_written(scratch))
        finished = None if ok else finished_tests(cout)
        if finished == []:
            return [(None, reason, wall)] * len(rows)
        dumps = []
        for f in dump_files(out):
            with open(f) as fh:
                text = fh.read()
            profile = parse(text)
            dumps.append((dump_trigger(text), totals(profile, functions[0], provider),
                          {fn: profile.calls_of(re.escape(fn)) for fn in functions}))
        results, calls = batch_results(rows, functions, dumps, int(run_ops(s)), finished,
                                       reason)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for r, fn in zip(rows, functions):
        if calls is not None and calls[fn]:
            write_calls(s, f"cost-{transport}-{r.name}", fn, calls[fn])
    return [(per_op, why, wall) for per_op, why in results]


def write_calls(s, name, fn, calls):
    """The row's per-call counts, logs/<name>.calls."""
    with open(os.path.join(s.logdir, f"{name}.calls"), "w") as f:
        f.write("# per call of %s, in order: instructions, work requests posted, system calls\n"
                % fn)
        f.write("".join("%d %d %d\n" % (c[INSTR], c["post_send_per_op"], c["syscalls_per_op"])
                        for c in calls))


def progress_row(s, r, transport, name, dumps, progress, mark, receive):
    """A PROGRESS or RECEIVER row from its dumps -> (per operation or None, reason)."""
    calls, ops, why = progress_calls(dumps, progress, mark, receive)
    if calls is None:
        return None, why
    with open(os.path.join(s.logdir, f"{name}.calls"), "w") as f:
        f.write(f"# per call of {progress} (p) or {receive} (r): operations ({mark}) before it, "
                "instructions, poll_cq, post_recv, the verbs provider's instructions\n")
        f.write("".join("%d %s %d %d %d %d\n" % (before, "p" if p else "r", c[INSTR],
                                                 c["poll_cq_per_op"], c["post_recv_per_op"],
                                                 c.get(SPLIT_PREFIX + "provider", 0))
                        for before, p, c in calls))
    if r.method == PROGRESS:
        per_op, n = idle_call([c for _, p, c in calls if p])
        print(f"    {transport} {r.name}: {progress}: {n} of {len(calls)} calls at "
              f"{per_op[INSTR]}", flush=True)
        return per_op, None
    per_op, idle = receiver_per_operation(calls, ops)
    if per_op is None:
        return None, f"too few operations ({ops})"
    print(f"    {transport} {r.name}: {progress}: {idle[1]} of the {idle[2]} calls of the last "
          f"{ops - ops // 2} operations found nothing (the provider's {idle[0]:g} instructions "
          "per empty poll)", flush=True)
    return per_op, None


def program_segments(dumps):
    """One process's dumps (trigger, totals), in order -> [(the function whose call the
    segment is, its totals)] or a reason: a dump holds what ran since the previous one, the call
    that triggered the previous dump (only the parts' functions are collected).  The last
    segment is left out: its profile is the one at exit (see per_operation)."""
    if len(dumps) < 3:
        return None, f"{max(0, len(dumps) - 1)} calls recorded"
    if dumps[0][1][INSTR]:
        return None, "callgrind collected before the first dump"
    segments = []
    for (trigger, _), (_, content) in zip(dumps[:-1], dumps[1:-1]):
        m = re.match(r"--dump-before=(.*)$", trigger.strip())
        segments.append((m.group(1) if m else trigger, content))
    return segments, None


def program_per_operation(ranks, labels, expect):
    """{rank: program_segments' list}, {rank: label} -> (per operation, None) or (None,
    reason).  Per rank: its operations (one per dump), the last half of them (the first pay the
    endpoint's wire-up and pools, as on the perftest rows).  An operation that waits (MPI_Recv,
    a flush) spins in SPIN until what it waits for is there, a number of times that depends on
    timing: the programs make it wait for nothing (mpi_cost.c: rank 1 receives once rank 0's
    send has returned, and a little later), and the row keeps the operations with the fewest
    spins (how many: "kept"), averaged, whatever else happens in them every so often (a
    receive queue refilled) in its share.  Taking longer waits out at an idle spin's cost does
    not work: a spin costs more while a send completion is outstanding than after (gdr_rc
    polls its send CQ only then: 286 and 235 instructions under MPICH).  The row is the sum
    over the ranks (MPI_Send on one, MPI_Recv of the same message on the other); per rank,
    under PART_PREFIX + "parts": the instructions, the fewest spins, the operations kept and
    in all, and the typical operation (the most frequent count among those kept).  An
    operation that made no call of expect[label] (the MPI did not go through UCP) is an
    error."""
    total, parts_out = {}, {}
    for rank in sorted(ranks):
        label = labels[rank]
        calls = [c for _, c in ranks[rank]]
        calls = calls[len(calls) // 2:]
        if not calls:
            return None, f"rank {rank}: no {label} operation recorded"
        through = sum(c.get("expect", 0) >= 1 for c in calls)
        if through < len(calls):
            return None, (f"rank {rank}: {len(calls) - through} of {len(calls)} {label} "
                          f"operations made no call of {' or '.join(expect[label])}: not "
                          "through UCP, or not collected")
        fewest = min(c["spins"] for c in calls)
        kept = [c for c in calls if c["spins"] == fewest]
        mean = {}
        for c in kept:
            mean = add(mean, {k: v for k, v in c.items() if k not in ("expect", "spins")})
        mean = {k: v / len(kept) for k, v in mean.items()}
        total = add(total, mean)
        typical = collections.Counter(c[INSTR] for c in kept).most_common(1)[0][0]
        parts_out[label] = {"instr": round(mean[INSTR], 2), "spins": fewest, "kept": len(kept),
                            "typical": typical, "operations": len(calls)}
    total[PART_PREFIX + "parts"] = parts_out
    return total, None


RANK_VARIABLE = {"ompi": "OMPI_COMM_WORLD_RANK", "mpich": "PMI_RANK"}


def program_command(s, r, transport, grind, env):
    """The command line of a PROGRAM row: the measured ranks under grind(rank), the others native;
    MPI: two ranks on this host over UCP with UCX_TLS of the transport."""
    p = PROGRAMS[r.name]
    binary = os.path.join(os.path.dirname(s.provider_ops), p.binary)
    prog = [binary] + list(p.args)
    if p.launcher == "ucp":
        return grind(0) + prog, env
    ranks = [grind(rank) + prog if rank in p.ranks else prog for rank in (0, 1)]
    if p.launcher == "ompi":
        # Debian's openmpi-mca-params.conf disables pml ucx and filters its devices to mlx*
        # (tests/ucx_tools/mpi_ring.sh); the ranks get the environment with -x, mpirun itself
        # must not preload the plugin.  One app context whose ranks pick their own command line
        # by rank, not one context per rank (`-np 1 A : -np 1 B`): Open MPI 5.0.7 as Debian 13
        # packages it (external PRRTE and PMIx) segfaults in mpirun on any such command line
        # (open-mpi/ompi#13303; `mpirun -np 1 true : -np 1 true` exits 139 in the leg's root).
        # The plugin reaches the ranks as GDR_COST_PRELOAD and is preloaded only by the exec,
        # not into the shell that picks the command line.
        cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "--mca", "pml", "ucx",
               "--mca", "pml_ucx_tls", "any", "--mca", "pml_ucx_devices", "any", "--mca", "osc",
               "ucx", "--mca", "btl", "self", "-np", str(len(ranks))]
        for var in ("UCX_TLS", "UCX_NET_DEVICES", "UCX_UD_VERBS_ETH_DGID_CHECK",
                    "UCX_WARN_UNUSED_ENV_VARS", "LD_BIND_NOW") + tuple(r.env):
            if var in env:
                cmd += ["-x", f"{var}={env[var]}"]
        preload = ""
        if "LD_PRELOAD" in env:
            cmd += ["-x", f"GDR_COST_PRELOAD={env['LD_PRELOAD']}"]
            preload = 'LD_PRELOAD="$GDR_COST_PRELOAD" '
        env = {k: v for k, v in env.items() if k != "LD_PRELOAD"}
        picks = " ".join(f"{rank}) exec env {preload}{shlex.join(argv)} ;;"
                         for rank, argv in enumerate(ranks))
        rank_var = "$" + RANK_VARIABLE["ompi"]
        script = (f'case "{rank_var}" in {picks} '
                  f'*) echo "no command line for rank {rank_var}" >&2; exit 2 ;; esac')
        return cmd + ["sh", "-c", script], env
    # MPICH's hydra passes its environment to the ranks (docs/mpich.md); ch4 would carry the
    # messages between ranks of one node through its POSIX shared memory: MPIR_CVAR_NOLOCAL=1
    # makes the peer remote, so that they go through UCP (checked: PROGRAM rows' `expect`)
    env = dict(env, MPIR_CVAR_NOLOCAL="1")
    cmd = ["mpiexec.mpich"]
    if "LD_PRELOAD" in env:
        cmd += ["-genv", "LD_PRELOAD", env["LD_PRELOAD"]]
        env = {k: v for k, v in env.items() if k != "LD_PRELOAD"}
    sep = []
    for argv in ranks:
        cmd += sep + ["-n", "1"] + argv
        sep = [":"]
    return cmd, env


def measure_program(s, r, transport, provider, name, scratch):
    """A PROGRAM row: its program once, the measured ranks under callgrind with each part's
    function collected and a dump before each call -> (per operation or None, reason, wall)."""
    p = PROGRAMS[r.name]
    binary = os.path.join(os.path.dirname(s.provider_ops), p.binary)
    if not os.access(binary, os.X_OK):
        return None, f"{binary} not built (cmake --build <build> --target {p.binary})", 0.0
    if p.launcher in ("ompi", "mpich"):
        launcher = {"ompi": "mpirun", "mpich": "mpiexec.mpich"}[p.launcher]
        if not shutil.which(launcher):
            return None, f"{launcher} not found", 0.0
    out = os.path.join(scratch, "cg.")
    out += "%q{" + RANK_VARIABLE[p.launcher] + "}" if p.launcher in RANK_VARIABLE else "0"

    windows = {}
    for rank, (_, functions) in p.ranks.items():
        windows[rank], why = callgrind_window([("toggle-collect", f) for f in functions] +
                                              [("dump-before", functions[0])])
        if why:
            return None, f"rank {rank}: {why}", 0.0

    cmd, env = program_command(s, r, transport, lambda rank: grind_command(windows[rank], out),
                               row_env(s, r, transport))
    ok, output, reason, wall = run_single(name, cmd, env, s.timeout, s.logdir,
                                          probe=profiles_written(scratch))
    if not ok:
        return None, reason, wall
    ranks = {}
    for rank in p.ranks:
        base = os.path.join(scratch, f"cg.{rank}")
        if os.path.exists(base):
            shutil.copy(base, os.path.join(s.logdir, f"{name}.{rank}.callgrind.out"))
        dumps = []
        for f in dump_files(base):
            with open(f) as fh:
                text = fh.read()
            prof = parse(text)
            c = totals(prof, SPIN, provider)
            c["spins"] = c.pop("ops")
            c["expect"] = min(prof.calls_of(e) for e in p.expect[p.ranks[rank][0]])
            dumps.append((dump_trigger(text), c))
        segments, why = program_segments(dumps)
        if segments is None:
            return None, f"rank {rank}: {why}", wall
        ranks[rank] = segments
    with open(os.path.join(s.logdir, f"{name}.calls"), "w") as f:
        f.write(f"# per call, in order: rank, function, instructions, {SPIN} calls, work "
                "requests posted, system calls\n")
        for rank, segments in sorted(ranks.items()):
            f.write("".join("%d %s %d %d %d %d\n" % (rank, fn, c[INSTR], c["spins"],
                                                     c["post_send_per_op"], c["syscalls_per_op"])
                            for fn, c in segments))
    per_op, why = program_per_operation(ranks, {r: p.ranks[r][0] for r in ranks}, p.expect)
    return per_op, why, wall


def unavailable(s):
    """Why no row can be measured, or None."""
    if not shutil.which("valgrind"):
        return "valgrind not installed (apt-get install valgrind)"
    return missing_ucx_tools() or s.provider_ops_missing


def selected_rows(names):
    """COST_ROWS in their order, only those named (None: all)."""
    return [r for r in COST_ROWS if names is None or r.name in names]


def callgrind_name(obj, offset):
    """The name callgrind gives the function at `offset` in `obj`: its symbol in the object's
    symbol table (dladdr sees only the exported ones: gdr_rc's progress is static), else the
    offset, as callgrind names a function without a symbol (rc_verbs' in Debian's stripped UCX)."""
    try:
        out = subprocess.run(["nm", "--defined-only", obj], text=True, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] in "tT" and int(fields[0], 16) == offset:
            return fields[2]
    return "0x%016x" % offset


def progress_function(s, transport):
    """The iface's progress function of `transport` as callgrind names it (perf/cost/progress_fn,
    next to provider_ops: "<transport> <object> 0x<offset> <symbol or ->"), or None."""
    tool = os.path.join(os.path.dirname(s.provider_ops), "progress_fn")
    try:
        out = subprocess.run([tool, transport, s.net_device], env=s.base_env(transport),
                             text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"  cost: {tool}: {e}", flush=True)
        return None
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[0] == transport and fields[2].startswith("0x"):
            return callgrind_name(fields[1], int(fields[2], 16))
    print(f"  cost: {tool} {transport}: {out.strip()[-300:]}", flush=True)
    return None


def run_cost(s):
    """Every selected row on both transports; --cost-jobs pairs at a time (counts are exact
    whatever runs next to them: only valgrind's start-up, a minute a pair under TCG, is
    shared out).  The rows are recorded in the table's order once all have run."""
    provider, why_all = {}, unavailable(s)
    s.progress_fns = {}
    if not why_all:
        out = subprocess.run([s.provider_ops, s.port.device], text=True, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=60).stdout
        provider = provider_functions(out)
        s.progress_fns = {t: progress_function(s, t) for t in ("rc_verbs", "gdr_rc")}
        # what the counts are keyed on, for the record (logs/, not the terminal)
        with open(os.path.join(s.logdir, "cost-functions.txt"), "w") as f:
            f.write("".join(f"verbs {call}: {obj} {name}\n"
                            for call, (obj, name) in sorted(provider.items())))
            f.write("".join(f"progress {t}: {fn}\n" for t, fn in s.progress_fns.items()))
    rows = selected_rows(getattr(s.args, "cost_rows", None))
    jobs = [(g, t) for g in batch_groups(rows) for t in ("rc_verbs", "gdr_rc")]

    def measure(job, port):
        group, transport = job
        why = why_all or (transport == "gdr_rc" and s.gdr_unavailable)
        if why:
            return [(None, why, 0.0)] * len(group)
        if len(group) > 1:
            name = f"cost-{transport}-" + "+".join(r.name for r in group)
            results = measure_batch(s, group, transport, provider, name, port)
        else:
            results = [profile_row(s, group[0], transport, provider,
                                   f"cost-{transport}-{group[0].name}", port)]
        for r, (per_op, why, wall) in zip(group, results):
            print(f"    {transport} {r.name}: " + (f"{per_op[INSTR]:.2f} instructions per "
                  f"operation" if per_op else f"n/a ({why})") + f", {wall:.0f} s", flush=True)
            # each pair's result as soon as it is known: a run cut short keeps what it measured
            with open(os.path.join(s.logdir, f"cost-{transport}-{r.name}.json"), "w") as f:
                json.dump(dict(per_op=per_op, reason=why, wall=wall), f)
        return results

    ports = [s.ports.take() for _ in jobs]  # taken here: PortAllocator is not thread-safe
    with concurrent.futures.ThreadPoolExecutor(max(1, getattr(s.args, "cost_jobs", 1))) as pool:
        measured = {}
        for (group, transport), results in zip(jobs, pool.map(measure, jobs, ports)):
            for r, result in zip(group, results):
                measured[r.name, transport] = result
    for r, transport in ((r, t) for r in rows for t in ("rc_verbs", "gdr_rc")):
        per_op, why, wall = measured[r.name, transport]
        name = f"cost-{transport}-{r.name}"
        for metric in METRICS:
            value = per_op.get(metric) if per_op else None
            # quiet: the pair's line above already said it, once
            s.results.record("cost", r.name, r.size, metric, transport, value, why, wall, name,
                             tool="callgrind", show=False)
        if per_op:
            split = {k[len(SPLIT_PREFIX):]: round(v, 1) for k, v in per_op.items()
                     if k.startswith(SPLIT_PREFIX)}
            s.results.rows[-len(METRICS)]["split"] = split
            objects = {k[len(OBJECT_PREFIX):]: round(v, 1) for k, v in per_op.items()
                       if k.startswith(OBJECT_PREFIX) and v}
            s.results.rows[-len(METRICS)]["objects"] = objects
            if PART_PREFIX + "parts" in per_op:
                s.results.rows[-len(METRICS)]["parts"] = per_op[PART_PREFIX + "parts"]

    if not getattr(s.args, "cost_rows", None):  # the whole section, not a regression subset
        registration.run_registration(s)  # registration rows (sections/registration.py)

def regressions(rows, names):
    """The cost rows `names` of a results.json's rows where gdr_rc executes more instructions
    per operation than rc_verbs (the CI regression test), or either side is n/a: a row that
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
