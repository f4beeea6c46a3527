#!/usr/bin/env python3
"""perf/scale/model.py: the 4,096-rank scale model of docs/scale.md, computed from its inputs.

Every input below is either measured by this project (the command that measured it is named)
or a published figure (cited).  The script prints the tables of docs/scale.md as markdown;
--check FILE fails (exit 1) when the tables between the markers in FILE differ from what the
inputs give, so the document cannot drift from its inputs.

  perf/scale/model.py [--check docs/scale.md]
"""
import argparse
import math
import sys

BEGIN = "<!-- perf/scale/model.py: begin -->"
END = "<!-- perf/scale/model.py: end -->"

# ---------------------------------------------------------------- the job
NODES, GPUS_PER_NODE, HCAS_PER_NODE = 512, 8, 8
P = NODES * GPUS_PER_NODE  # 4,096 ranks, one per GPU; one HCA per rank

# ---------------------------------------------------------------- measured by this project
# Soft-RoCE VM (rxe, UCX 1.13.1), 2026-12-02:
#   tests/rxe-vm/run build/perf/bench/gdr_ep_scale            (UCT, N = 1, 16, 64, 256)
#   tests/rxe-vm/run build/perf/bench/gdr_ep_scale -u 8 -r ring|all   (UCP, UCX_TLS=gdr_rc,ud_verbs:aux)
UCT_EP_RSS = {"gdr_rc": 267_376, "rc_verbs": 267_376}  # bytes per endpoint at N = 256
UCT_EP_QPS = {"gdr_rc": 1, "rc_verbs": 1}
UCT_EP_MR = {"gdr_rc": 0, "rc_verbs": 0}  # registered bytes per endpoint
IFACE_RSS = {"gdr_rc": 10_246_144, "rc_verbs": 40_620_032}  # per interface (device)
IFACE_MR = {"gdr_rc": 8_552_448, "rc_verbs": 37_748_736}
IFACE_QPS = {"gdr_rc": 0, "rc_verbs": 2}
UCP_RANK_RSS_RING = 26_607_616  # a rank with 2 peers (median of the 8 ranks)
UCP_RANK_RSS_ALL = 28_151_808  # a rank with 7 peers
UCP_EP_RSS = (UCP_RANK_RSS_ALL - UCP_RANK_RSS_RING) // 5  # one ucp_ep with its gdr_rc lane
UCP_RANK_UD_QPS = 1  # ud_verbs:aux, one per worker, whatever the peer count
# Registration (docs/perf-compare.md, "Registration cost": gdr_reg_bench -c under callgrind).
# Before the md per device: one md over N devices, a fixed part and one ibv_reg_mr per device
REG_INSTR_FIXED, REG_INSTR_PER_DEVICE = 475, 614  # user-space instructions per registration
DEREG_INSTR_FIXED, DEREG_INSTR_PER_DEVICE = 206, 335
# now: an md per device (gdr_<device>), measured on one md of the 2-device VM
REG_INSTR_PER_MD, DEREG_INSTR_PER_MD, RKEY_BYTES_PER_MD = 1056, 519, 5
REG_UNCACHED_S_VM = 0.21e-3  # 64 KiB, 1 device, time in the VM (emulated)
REG_HIT_S_VM = 5.3e-6
RKEY_BYTES_FIXED, RKEY_BYTES_PER_DEVICE = 2, 4
# alpha and beta in the VM (docs/perf-compare.md, "Measured on an idle host": perf/compare/run
# --quick): gdr_rc put_lat 8 B and put_bw 64 KiB. Emulated CPU: relative use only.
ALPHA_VM = 21.0e-6
BETA_VM = 1 / (26.49 * 2**20)

# ---------------------------------------------------------------- published
# UCX 1.18.1 src/uct/ib/base/ib_iface.c, uct_ib_iface_query(): NDR latency.c = 600 ns; wire
# speed = width 4 x signal rate 100e9 x encoding 64/66 / 8 bytes.
ALPHA_NDR = 600e-9
BETA_NDR = 1 / (4 * 100e9 * 64 / 66 / 8)
# rc_mlx5_iface.c / rc_verbs_iface.c: latency.m += 1 ns per extra QP (our gdr_iface_query.c says
# the same); dc_mlx5.c: latency.c += 60 ns (connect packet + CQE); UCP scores a lane's latency as
# c + m * UCX_NUM_EPS (ucp/wireup/select.c).  dc_mlx5.c: NUM_DCI default 32.
RC_NS_PER_QP, DC_EXTRA_NS, DC_NUM_DCI = 1, 60, 32

# The selector's cut-overs (ucp_cpp_coll/include/ucp_cpp/coll/algorithms.hpp, coll::thresholds).
CUT_RABENSEIFNER, CUT_KNOMIAL_RANKS, CUT_ALPHA_BETA, KNOMIAL_RADIX = 16 * 1024, 16, 16 * 1024, 4
ELEM = 4  # float


def fmt_bytes(b):
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= size:
            return f"{b / size:.1f} {unit}"
    return f"{b:.0f} B"


def fmt_time(s):
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} µs"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


# ---------------------------------------------------------------- peers of each algorithm
def knomial_radices(p, radix):
    """coll::detail::knomial_shape_of: the rounds' radices (the extra ranks fold first)."""
    core, radices, k = 1, [], max(2, min(radix, p))
    while core <= p // k:
        core *= k
        radices.append(k)
    if p // core > 1:
        radices.append(p // core)
        core *= p // core
    return core, radices


def peers(algorithm, r, p):
    """The ranks that rank r exchanges messages with in one allreduce (p a power of two)."""
    L = int(math.log2(p))
    if algorithm == "ring":
        return {(r + 1) % p, (r - 1) % p}
    if algorithm in ("recursive_doubling", "rabenseifner"):
        return {r ^ (1 << i) for i in range(L)}
    if algorithm == "knomial":
        core, radices = knomial_radices(p, KNOMIAL_RADIX)
        out, span = set(), 1
        for k in radices:
            digit = (r // span) % k
            out |= {r + (d - digit) * span for d in range(k) if d != digit}
            span *= k
        return out
    raise ValueError(algorithm)


ALGORITHMS = ("recursive_doubling", "knomial", "rabenseifner", "ring")


def union_peers(p, r=0):
    out = set()
    for a in ALGORITHMS:
        out |= peers(a, r, p)
    return out


# ---------------------------------------------------------------- alpha-beta
def cost(algorithm, n, p, alpha, beta):
    """Hockney cost (no gamma: no reduction rate was measured) for p a power of two."""
    L = int(math.log2(p))
    if algorithm == "recursive_doubling":
        return L * alpha + L * n * beta
    if algorithm == "knomial":
        _, radices = knomial_radices(p, KNOMIAL_RADIX)
        return len(radices) * alpha + sum(k - 1 for k in radices) * n * beta
    if algorithm == "rabenseifner":
        return 2 * L * alpha + 2 * n * (p - 1) / p * beta
    if algorithm == "ring":
        return 2 * (p - 1) * alpha + 2 * n * (p - 1) / p * beta
    raise ValueError(algorithm)


def ring_cut(p):
    """coll::thresholds::allreduce_ring(p)."""
    log2p = 0
    while (2 << log2p) <= p:
        log2p += 1
    if p & (p - 1) == 0:
        return 16 * (p - 1 - log2p) * CUT_ALPHA_BETA
    return (p - 2 - log2p) * CUT_ALPHA_BETA


def selector(n, p):
    """coll::detail::choose_allreduce."""
    count = n // ELEM
    if n < CUT_RABENSEIFNER or count < p:
        pof2 = p & (p - 1) == 0
        return "recursive_doubling" if pof2 and p < CUT_KNOMIAL_RANKS else "knomial"
    return "ring" if n >= ring_cut(p) else "rabenseifner"


# ---------------------------------------------------------------- the tables
def connections():
    off_node = P - GPUS_PER_NODE  # peers on the same node go over NVLink (cuda_ipc), not an HCA
    on_demand = len(union_peers(P))
    rows = []
    # ucp_cpp::coll's engine connects on the first transfer with a peer (coll/engine.hpp): a
    # rank holds the peers of the algorithms it ran, one row per allreduce algorithm.
    per_algorithm = [(f"on demand: {a} only", len(peers(a, 0, P)))
                     for a in ("ring", "recursive_doubling", "rabenseifner", "knomial")]
    for name, k in ([("full mesh (eager, every off-node peer)", off_node)] + per_algorithm +
                    [("on demand: all four allreduce algorithms", on_demand)]):
        qps = k * UCT_EP_QPS["gdr_rc"]
        mem = k * UCP_EP_RSS
        rows.append([name, k, qps + UCP_RANK_UD_QPS, qps * GPUS_PER_NODE // HCAS_PER_NODE,
                     fmt_bytes(mem), fmt_bytes(mem + UCP_RANK_RSS_RING - 2 * UCP_EP_RSS),
                     f"{k * RC_NS_PER_QP} ns"])
    return table(["connections per rank", "peers", "QPs per rank (RC + UD)", "RC QPs per HCA",
                  "endpoint memory per rank", "rank total (UCP, 1 HCA)",
                  "UCX's RC latency penalty"], rows)


def registration():
    devices = HCAS_PER_NODE
    before = ("before: one md gdr over the node's 8 HCAs", devices,
              REG_INSTR_FIXED + REG_INSTR_PER_DEVICE * devices,
              DEREG_INSTR_FIXED + DEREG_INSTR_PER_DEVICE * devices,
              RKEY_BYTES_FIXED + RKEY_BYTES_PER_DEVICE * devices)
    now = ("now: an md per device (gdr_<device>), one rail", 1, REG_INSTR_PER_MD,
           DEREG_INSTR_PER_MD, RKEY_BYTES_PER_MD)
    rows = []
    for name, mrs, reg, dereg, rkey in (before, now):
        rows.append([name, mrs, f"{reg:,}", f"{dereg:,}", rkey,
                     fmt_bytes(rkey * (P - 1)), fmt_time(REG_UNCACHED_S_VM * mrs)])
    return table(["registration", "ibv_reg_mr per miss", "instructions to register",
                  "to deregister", "packed rkey (B)", "rkeys of all peers (full mesh)",
                  "miss time (VM's 1-device time × devices)"], rows)


SIZES = (8, 4 * 2**10, 64 * 2**10, 2**20, 16 * 2**20, 256 * 2**20, 2**30)


def allreduce(alpha, beta):
    rows = []
    for n in SIZES:
        # The block algorithms split the vector into p blocks: with fewer elements than ranks the
        # selector never offers them, and neither does the comparison.
        blocks = n // ELEM >= P
        costs = {a: cost(a, n, P, alpha, beta) for a in ALGORITHMS
                 if blocks or a not in ("rabenseifner", "ring")}
        best = min(costs, key=costs.get)
        pick = selector(n, P)
        rows.append([fmt_bytes(n)] +
                    [fmt_time(costs[a]) if a in costs else "n < p" for a in ALGORITHMS] +
                    [best, pick, f"{costs[pick] / costs[best]:.2f}"])
    return table(["n"] + list(ALGORITHMS) + ["α-β best", "selector picks", "pick / best"], rows)


def break_even():
    # UCX's own RC-vs-DC break-even: RC's latency grows RC_NS_PER_QP a QP, DC pays DC_EXTRA_NS
    # once, so RC is the better choice up to DC_EXTRA_NS / RC_NS_PER_QP endpoints a process;
    # and DC holds DC_NUM_DCI + 1 QPs a process whatever the job size.
    limit = DC_EXTRA_NS // RC_NS_PER_QP
    rows = []
    for p in (64, 512, 4096, 32768, 2**20):
        full = p - GPUS_PER_NODE
        k = len(union_peers(p))
        rows.append([f"{p:,}", f"{full:,}", "yes" if full <= limit else "no", k,
                     "yes" if k <= limit else "no", "yes" if k <= DC_NUM_DCI + 1 else "no"])
    return table(["ranks", "full-mesh peers", f"≤ {limit}: RC beats DC", "on-demand allreduce peers",
                  f"≤ {limit}: RC beats DC", f"≤ {DC_NUM_DCI + 1}: no more QPs than DC"], rows)


def render():
    parts = [
        f"Job: {NODES} nodes × {GPUS_PER_NODE} GPUs, {HCAS_PER_NODE} HCAs a node, P = {P:,} ranks.",
        "", "Connections (per-endpoint memory: the measured UCP endpoint over gdr_rc, "
        f"{fmt_bytes(UCP_EP_RSS)}, of which the QP is {fmt_bytes(UCT_EP_RSS['gdr_rc'])}):", "",
        connections(), "", "Registration:", "", registration(), "",
        f"Allreduce, NDR (α = {ALPHA_NDR * 1e9:.0f} ns, β = 1/{1 / BETA_NDR / 1e9:.2f} GB/s, "
        "published):", "", allreduce(ALPHA_NDR, BETA_NDR), "",
        f"Allreduce, Soft-RoCE VM (α = {ALPHA_VM * 1e6:.1f} µs, β = 1/{1 / BETA_VM / 2**20:.2f} "
        "MiB/s, measured, emulated):", "", allreduce(ALPHA_VM, BETA_VM), "",
        f"Break-even (UCX's model: RC +{RC_NS_PER_QP} ns a QP, DC +{DC_EXTRA_NS} ns):", "",
        break_even(), "",
        f"A full mesh stays within the break-even up to {DC_EXTRA_NS // RC_NS_PER_QP + GPUS_PER_NODE} "
        f"ranks ({(DC_EXTRA_NS // RC_NS_PER_QP + GPUS_PER_NODE) // GPUS_PER_NODE} nodes of "
        f"{GPUS_PER_NODE} GPUs).",
    ]
    return "\n".join(parts) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", metavar="FILE",
                        help="fail unless FILE holds these tables between its model markers")
    args = parser.parse_args()
    text = render()
    if not args.check:
        sys.stdout.write(text)
        return 0
    with open(args.check, encoding="utf-8") as f:
        doc = f.read()
    if BEGIN not in doc or END not in doc:
        print(f"{args.check}: no '{BEGIN}' ... '{END}' block", file=sys.stderr)
        return 1
    held = doc.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"
    if held != text:
        print(f"{args.check}: the model's tables differ from what perf/scale/model.py computes "
              "now; paste its output between the markers", file=sys.stderr)
        return 1
    print(f"{args.check}: the tables match the model's inputs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
