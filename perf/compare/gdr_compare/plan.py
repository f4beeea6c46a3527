"""The measurement plan: sections, tests, sizes, transports, iteration counts, and the size and
bus-bandwidth conventions that make the collectives of the two tools comparable."""

from .units import BW, KiB, LAT, MR, MiB

SECTIONS = ("uct", "ucp", "raw", "wrapper", "coll", "cost")
# callgrind makes the cost section minutes long per row: a full run has it, --quick does not
NOT_QUICK = ("cost",)
# the sections of server/client pairs, which --peer runs across a wire
PAIR_SECTIONS = ("uct", "ucp", "raw")

# Which program produced a row (results.json/CSV field "tool"); "coll_bench" = ucp_cpp::coll timed
# by perf/coll_bench, "mpi" = the MPI library's collective timed by perf/coll_bench.
SECTION_TOOL = {"uct": "ucx_perftest", "ucp": "ucx_perftest", "raw": "perftest"}


class Iterations:
    """Iteration and warm-up counts: --quick keeps the whole VM run within a few minutes under
    TCG."""

    def __init__(self, quick):
        self.quick = quick

    def of(self, metric, size):
        if metric == MR:  # short messages: enough of them that the run is not all start-up
            return (2000, 200) if self.quick else (100000, 10000)
        if metric == LAT:
            return (1000, 100) if self.quick else (20000, 1000)
        if size >= MiB:
            return (30, 3) if self.quick else (300, 20)
        if size >= 64 * KiB:
            return (200, 20) if self.quick else (3000, 100)
        return (500, 50) if self.quick else (10000, 500)

    def coll(self):
        """Collectives: one count for every size of a launch (coll_bench --iterations N times
        every size alike), with coll_bench's warm-up of N/10 calls given to gdr_perftest as -w."""
        n = 50 if self.quick else 100
        return n, max(1, n // 10)


# Sizes: latency 8 B; bandwidth 64 KiB and 1 MiB.  UCT am_bw is limited to rc_verbs' AM segment
# (am_bcopy <= 8255 B with the default 8 KiB segment): it runs at 8 KiB.  UCX 1.13's
# ucx_perftest has no UCT get latency test: "get" is the UCT get bandwidth test.
#
# Message rate: put_bw and am_bw with 8 B short messages and many outstanding.
# ucx_perftest counts only operations that return UCS_INPROGRESS against its -O window, and a
# short put or AM completes at once (UCS_OK): put_short posts until the transport answers
# UCS_ERR_NO_RESOURCE (its send queue is full), am_short until its -W flow-control window (127
# unacknowledged messages, the default) is.  -O MR_WINDOW states the intent and bounds a
# transport that would complete them later.
MR_WINDOW = 128
UCT_TESTS = [  # (perftest test, size, data layout, metric)
    ("am_lat", 8, "short", LAT),
    ("put_lat", 8, "short", LAT),
    ("put_bw", 64 * KiB, "zcopy", BW),
    ("put_bw", MiB, "zcopy", BW),
    ("get", 64 * KiB, "zcopy", BW),
    ("get", MiB, "zcopy", BW),
    ("am_bw", 8 * KiB, "bcopy", BW),
    ("put_bw", 8, "short", MR),
    ("am_bw", 8, "short", MR),
]
UCP_TESTS = [
    ("tag_lat", 8, LAT),
    ("tag_bw", 64 * KiB, BW),
    ("tag_bw", MiB, BW),
    ("ucp_put_bw", 64 * KiB, BW),
    ("ucp_put_bw", MiB, BW),
]
RAW_TESTS = [  # (perftest binary, size, metric)
    ("ib_write_lat", 8, LAT),
    ("ib_write_bw", 64 * KiB, BW),
    ("ib_write_bw", MiB, BW),
    ("ib_read_bw", 64 * KiB, BW),
    ("ib_read_bw", MiB, BW),
]
TRANSPORTS = ("rc_verbs", "gdr_rc")
UCP_TLS = {"rc_verbs": "rc_verbs,ud_verbs:aux", "gdr_rc": "gdr_rc,ud_verbs:aux"}
# Which raw verbs number each UCT result is compared with (same operation, same size; latency and
# bandwidth: perftest has no message-rate result to compare with).
RAW_PEER = {"put_lat": "ib_write_lat", "put_bw": "ib_write_bw", "get": "ib_read_bw"}

# wrapper: gdr_perftest's test, ucx_perftest's test of the same operation, size, metric, in
# --quick.  Both sides: latency = median half round trip; bandwidth window 32 (ucx_perftest's
# default -O for tag_bw/ucp_put_bw, gdr_perftest's default -O), timing ended by remote completion.
WRAPPER_TESTS = [
    ("tag_lat", "tag_lat", 8, LAT, True),
    ("tag_bw", "tag_bw", 64 * KiB, BW, False),
    ("tag_bw", "tag_bw", MiB, BW, True),
    ("put_bw", "ucp_put_bw", 64 * KiB, BW, False),
    ("put_bw", "ucp_put_bw", MiB, BW, True),
]
UCX_TEST_OF = {t[0]: t[1] for t in WRAPPER_TESTS}


def section_transports(quick):
    """wrapper and coll: gdr_rc is their subject; rc_verbs for reference, not in --quick (it
    would add about 6 pairs to the wrapper section, a minute on the loaded 2-core host)."""
    return ["gdr_rc"] if quick else ["gdr_rc", "rc_verbs"]

# coll: the collectives both sides have, and the sizes.  coll_bench's sizes are per rank block
# ("bytes": 8, 32, 128, ... x4, then --max-size); gdr_perftest's follow nccl-tests (the whole
# gathered buffer for allgather, a rank's input for reduce_scatter, a rank's send buffer for
# alltoall): block x ranks for those three, the block itself for allreduce and bcast.
COLL_GROUPS = (("allreduce", "bcast"), ("allgather", "reduce_scatter", "alltoall"))
COLL_GATHERS = COLL_GROUPS[1]
COLL_BLOCKS_QUICK = (8, 2 * KiB, 32 * KiB)  # each 8 x 4^k (coll_bench's sequence) or the maximum
COLL_BLOCKS_FULL = (8, 32 * KiB, MiB)


def coll_size(op, block, ranks):
    """gdr_perftest's (nccl-tests') size of coll_bench's per-rank block."""
    return block * ranks if op in COLL_GATHERS else block


def bus_factor(op, ranks):
    """nccl-tests' busbw factor, as gdr_perftest and coll_bench apply it."""
    p = float(ranks)
    if op == "allreduce":
        return 2 * (p - 1) / p
    if op in COLL_GATHERS:
        return (p - 1) / p
    return 1.0


def busbw(op, size, ranks, time_us):
    """GB/s (10^9 B) from the time per call: size x factor / time.  Recomputed here for both tools
    from their times (they print 3-4 decimals, which reads 0.000 for small sizes in the VM)."""
    if time_us is None or time_us <= 0:
        return None
    return size * bus_factor(op, ranks) / (time_us * 1e-6) / 1e9


# --demo (`make demo`, README's command 1): what can be trusted first, in one VM boot.
#  * cost: the CI regression's rows (perf/cost/regression), exact instructions per call. Each
#    call is counted on its own, so a few calls give the same count as many: 66 operations, the
#    mean of calls 34-65 (cost.per_operation: the last half less the exit's), 32 calls = one
#    period of gdr_rc's signal moderation (TX_MODERATION 32), so its signaled send is in the
#    mean once, as in any long run.
#  * wall clock: a few rows, rc_verbs and gdr_rc interleaved DEMO_PAIRS times, each with its
#    min-max; under TCG most of them straddle 1.0 and say so ("not telling").
DEMO_SECTIONS = ("cost", "uct", "ucp")
DEMO_COST_ROWS = ("put_short", "am_short", "put_bcopy", "am_bcopy")
DEMO_COST_OPS = 66
DEMO_PAIRS = 3
DEMO_WALL = (("uct", "put_lat", 8), ("uct", "am_lat", 8), ("uct", "put_bw", 64 * KiB),
             ("ucp", "tag_lat", 8))
