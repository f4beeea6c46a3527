"""The terminal report: the header of the run and the three tables, each only when its sections
ran, with an n/a cell pointing to a numbered footnote that says why."""

import os

from .interleave import NOISY, ratio_text
from .plan import UCP_TLS
from .tables import comparison_rows, coll_rows, loads_of, wrapper_rows
from .units import COST_METRICS, LAT, TIME, UNIT, size_label

LOWER_IS_BETTER = (LAT, TIME)


def verdict(r, metric, subject="gdr_rc"):
    """What a wall-clock ratio says: "not telling" when its min-max over the interleaved pairs
    straddles 1.0 (the host moved the pairs further than the transports differ), "unjudged"
    with one pair (no spread), else which side is faster."""
    if r is None or r.get("median") is None:
        return "n/a"
    if not r.get("pairs") or r["pairs"] < 2:
        return "unjudged (1 pair)"
    if r["min"] <= 1.0 <= r["max"]:
        return "not telling"
    faster = (r["max"] < 1.0) == (metric in LOWER_IS_BETTER)
    return f"{subject} {'faster' if faster else 'slower'}"


def cost_ratio(r):
    """An exact cost ratio as the table and cost.png write it."""
    return "n/a" if r is None or r.get("median") is None else f"{r['median']:.3f}"


def cost_verdict(r):
    if r is None or r.get("median") is None:
        return "n/a"
    q = r["median"]
    return "equal" if q == 1 else ("gdr_rc cheaper" if q < 1 else "gdr_rc dearer")


def spread_cell(row, notes):
    """A row's median with the min-max of its good runs: "21.50 [20.5-24]"."""
    text = notes.cell(row)
    samples = (row or {}).get("samples") or []
    if row is not None and row["value"] is not None and len(samples) > 1:
        text += f" [{min(samples):.4g}-{max(samples):.4g}]"
    return text


def fmt(row):
    if row is None:
        return "-"
    return f"{row['value']:.2f}" if row["value"] is not None else "n/a"


def fmt_ratio(r):
    """An interleaved ratio as ratio_text() writes it; a plain quotient (pairs None) bare."""
    if r is not None and r.get("pairs") is None:
        return f"{r['median']:.2f}"
    return ratio_text(r)


def fmt_load(t):
    return f"{t['load'][0]:.1f}-{t['load'][1]:.1f}" if t.get("load") else "-"


def print_table(head, lines):
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
    print("  ".join("-" * w for w in widths))
    for line in lines:
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip())


class Notes:
    """The footnotes of n/a cells: one number per distinct reason."""

    def __init__(self):
        self.reasons = []

    def cell(self, row):
        text = fmt(row)
        if row is not None and row["value"] is None:
            if row["reason"] not in self.reasons:
                self.reasons.append(row["reason"])
            text += f" [{self.reasons.index(row['reason']) + 1}]"
        return text

    def bandwidth_cell(self, row):
        """busbw: 4 significant digits (two decimals read 0.00 for small collectives)."""
        text = self.cell(row)
        return f"{row['value']:.4g}" if row is not None and row["value"] is not None else text


def print_header(meta):
    vm = "  (Soft-RoCE VM, TCG: compare ratios only)" if meta["in_rxe_vm"] else ""
    print(f"device {meta['device']}  GID index {meta['gid_index']}  UCX {meta['ucx_version']}  "
          f"kernel {meta['kernel']}{vm}")
    if meta.get("peer"):
        print(f"across a wire: clients on {meta.get('host')}, servers on {meta['peer']} "
              "(--peer)")
    if meta.get("host_loadavg_start"):
        print(f"host load average (1 min) at start {meta['host_loadavg_start'][0]:.1f}, at end "
              f"{meta['host_loadavg_end'][0]:.1f} on {os.cpu_count()} CPUs")
    if meta.get("pairs"):
        print(f"{meta['pairs']} interleaved pair(s) per comparison (A B A B ...): ratio = median "
              f"of the per-pair ratios [min-max], 'noisy' when they spread more than "
              f"+-{NOISY:.0%} around it; load = {meta.get('load_source') or 'host'} 1-min load "
              f"average over the row's pairs")


def print_cost(table, notes):
    """The exact table, first: instructions per call of each cost row, gdr_rc against rc_verbs,
    then the row's other counts (system calls, verbs calls) per operation, rc_verbs/gdr_rc."""
    instr = [t for t in table if t["metric"] == COST_METRICS[0]]
    if not instr:
        return
    print("Exact cost per operation: instructions executed per call (valgrind's callgrind, "
          "counted, not timed:\nthe same on any host, load or run), gdr_rc against UCX's "
          "rc_verbs on the same device; lower is better")
    print_table(["operation", "size", "rc_verbs", "gdr_rc", "gdr_rc/rc_verbs", "verdict"],
                [[t["test"], size_label(t["size"]), notes.cell(t["rc_verbs"]),
                  notes.cell(t["gdr_rc"]),
                  cost_ratio(t["gdr_over_rc"]),
                  cost_verdict(t["gdr_over_rc"])] for t in instr])
    others = []
    for t in instr:
        parts = []
        for o in table:
            if (o["test"], o["size"]) == (t["test"], t["size"]) and o["metric"] != t["metric"]:
                v = [fmt(o[k]).replace(".00", "") for k in ("rc_verbs", "gdr_rc")]
                parts.append(f"{UNIT[o['metric']].split('/')[0]} {v[0]}/{v[1]}")
        if parts:
            others.append(f"  {t['test']}: " + ", ".join(parts))
    if others:
        print("per operation, rc_verbs/gdr_rc:")
        print("\n".join(others))
    print("posting side: the op function and all it calls (UCX, transport, verbs provider, "
          "libc); recv_*: the receiver's progress beyond its idle polls")
    print()


def print_transports(table, rows, notes, pairs=None):
    lines = []
    for t in table:
        raw, tcp = t["raw_tool"], t.get("tcp")
        lines.append([t["section"], t["test"], size_label(t["size"]), UNIT[t["metric"]],
                      spread_cell(t["rc_verbs"], notes), spread_cell(t["gdr_rc"], notes),
                      fmt_ratio(t["gdr_over_rc"]), verdict(t["gdr_over_rc"], t["metric"]),
                      raw or "-", spread_cell(t["raw"], notes) if raw else "-",
                      fmt_ratio(t["rc_over_raw"]) if raw else "-",
                      fmt_ratio(t["gdr_over_raw"]) if raw else "-",
                      spread_cell(tcp, notes) if tcp else "-",
                      fmt_ratio(t["rc_over_tcp"]) if tcp else "-",
                      fmt_ratio(t["gdr_over_tcp"]) if tcp else "-", fmt_load(t)])
    for r in rows:
        if r["section"] == "raw":
            lines.append(["raw", r["test"], size_label(r["size"]), UNIT[r["metric"]], "-", "-",
                          "-", "-", r["test"], spread_cell(r, notes), "-", "-", "-", "-", "-",
                          fmt_load(dict(load=loads_of(r)))])
    head = ["section", "test", "size", "unit", "rc_verbs", "gdr_rc", "gdr/rc", "verdict",
            "raw verbs", "raw", "rc/raw", "gdr/raw", "tcp", "rc/tcp", "gdr/tcp", "load"]
    shown = list(range(8))
    if any(t["raw"] is not None for t in table) or any(r["section"] == "raw" for r in rows):
        shown += [8, 9, 10, 11]
    if any(t.get("tcp") is not None for t in table):  # UCP over tcp ran: across a wire
        shown += [12, 13, 14]
    shown.append(15)
    if lines:
        print("Wall clock" + (f", {pairs} interleaved pair(s) per row" if pairs else "") +
              ": each value the median [min-max] of its runs; gdr/rc the median [min-max] of "
              "the per-pair ratios;\n'not telling': that min-max straddles 1.0 (the host moved "
              "the runs more than the transports differ)")
        print_table([head[i] for i in shown], [[line[i] for i in shown] for line in lines])
        print("latency: median one-way us, lower is better (ratio < 1: gdr_rc faster); "
              "bandwidth: MiB/s, message rate: msg/s, higher is better (ratio > 1: faster)")


def print_wrapper(wrapper, notes):
    cell = notes.cell
    print()
    print("wrapper: gdr_perftest (ucp_cpp) vs ucx_perftest, same UCX_TLS, sizes and iterations")
    print_table(["test", "ucx_perftest test", "size", "unit", "UCX_TLS", "gdr_perftest",
                 "ucx_perftest", "wrapper/ucx", "load"],
                [[t["test"], t["ucx_test"], size_label(t["size"]), UNIT[t["metric"]],
                  UCP_TLS[t["transport"]], cell(t["gdr_perftest"]), cell(t["ucx_perftest"]),
                  fmt_ratio(t["wrapper_over_ucx"]), fmt_load(t)] for t in wrapper])
    print("latency: median half round trip, us (ratio < 1: the wrapper is faster); bandwidth: "
          "MiB/s = 2^20 B/s (ratio > 1: the wrapper is faster)")


def print_coll(colls, notes):
    cell, bw = notes.cell, notes.bandwidth_cell
    print()
    print("coll: gdr_perftest (ucp_cpp::coll) vs MPI (coll_bench), same mpirun, ranks and UCX_TLS")
    print_table(["op", "ranks", "size", "block", "UCX_TLS", "ours us", "MPI us", "ours/MPI",
                 "ours GB/s", "MPI GB/s", "ours/MPI", "cb ours us", "cb/MPI", "load"],
                [[t["op"], t["ranks"], size_label(t["size"]), size_label(t["block"]),
                  UCP_TLS[t["transport"]], cell(t["ours_time"]), cell(t["mpi_time"]),
                  fmt_ratio(t["time_ratio"]), bw(t["ours_busbw"]), bw(t["mpi_busbw"]),
                  fmt_ratio(t["busbw_ratio"]), cell(t["coll_bench_time"]),
                  fmt_ratio(t["coll_bench_over_mpi"]), fmt_load(t)] for t in colls])
    print("time per call, max over ranks, us (ours/MPI <= 1: ours faster); busbw GB/s = "
          "10^9 B/s, nccl-tests factors (ours/MPI >= 1: ours faster);\nsize: nccl-tests size "
          "(gdr_perftest -s), block: coll_bench bytes; cb ours: ucp_cpp::coll timed by "
          "coll_bench in MPI's job, cb/MPI its ratio")


def print_report(doc):
    """The three tables (transports, wrapper, collectives), each only when its sections ran.
    Returns (transport table, wrapper table, collectives table)."""
    rows, ratios = doc["rows"], doc.get("ratios", [])
    table, wrapper, colls = (comparison_rows(rows, ratios), wrapper_rows(rows, ratios),
                             coll_rows(rows, ratios))
    notes = Notes()
    print()
    print_header(doc["meta"])
    print_cost([t for t in table if t["section"] == "cost"], notes)
    print_transports([t for t in table if t["section"] != "cost"], rows, notes,
                     doc["meta"].get("pairs"))
    if wrapper:
        print_wrapper(wrapper, notes)
    if colls:
        print_coll(colls, notes)
    for i, note in enumerate(notes.reasons, 1):
        print(f"[{i}] {note}")
    return table, wrapper, colls
