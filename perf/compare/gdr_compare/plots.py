"""The plots: grouped bars per test and size, n/a marked (never drawn as a bar), log scale when
the values span more than 50x.  latency.png and bandwidth.png (transports), wrapper.png
(gdr_perftest vs ucx_perftest), coll.png (ours vs MPI), cost.png (instructions per operation).
Without python3-matplotlib: none."""

import os

from .units import BW, COST_METRICS, LAT, size_label

# Type sizes: a transport figure has one panel, the section figures have two and smaller type.
ONE_PANEL = dict(bar=7, ticks=8, legend=8, title={})
TWO_PANELS = dict(bar=6, ticks=7, legend=7, title=dict(fontsize=9))

GDR_PERFTEST = ("gdr_perftest", "gdr_perftest (ucp_cpp)", "C1")
COLL_SERIES = [("ours", "gdr_perftest (ucp_cpp::coll)", "C1"), ("mpi", "MPI (coll_bench)", "C0")]


def pyplot():
    """matplotlib's pyplot on the Agg backend (no display needed), or None."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print(f"compare: no plots ({e})")
        return None
    return plt


def count_text(value):
    """An exact count as a bar's label: whole thousands with separators (1,470, not 1.47e+03),
    fractions where they are small."""
    return f"{value:,.0f}" if value >= 1000 else f"{value:.4g}"


def grouped_bars(ax, groups, series, labels, title, style, ylabel, xlabel, counts=False):
    """One bar per series per group (a group: dict series key -> row or None); a series with no
    row in any group is left out, an n/a row is marked, never drawn.  A row measured more than
    once has the min-max of its runs as an error bar.  The legend goes outside the axes, to the
    right, where it can cover no bar; the value is written inside the bar, or with counts (exact
    figures of several digits) upright above it, where no neighbour's can overlap it."""
    from matplotlib.patches import Patch
    # a series no group has (raw verbs when the raw section did not run) takes no room
    series = [sr for sr in series if any(g.get(sr[0]) is not None for g in groups)] or series
    width = 0.8 / len(series)
    handles = []  # built by hand: an all-n/a series has no bar to take its colour from
    spread = False
    for i, (key, label, color) in enumerate(series):
        xs, ys, lo, hi, missing = [], [], [], [], []
        for x, group in enumerate(groups):
            row = group[key]
            pos = x + (i - (len(series) - 1) / 2) * width
            if row is not None and row["value"] is not None:
                xs.append(pos)
                ys.append(row["value"])
                samples = row.get("samples") or [row["value"]]
                lo.append(row["value"] - min(samples))
                hi.append(max(samples) - row["value"])
                spread = spread or len(samples) > 1
            elif row is not None:
                missing.append(pos)
        if not xs and not missing:
            continue
        bars = ax.bar(xs, ys, width, color=color, yerr=[lo, hi] if any(lo + hi) else None,
                      error_kw=dict(ecolor="black", capsize=3, elinewidth=1))
        handles.append(Patch(color=color,
                             label=label + (f" ({len(missing)} n/a)" if missing else "")))
        if counts:
            ax.bar_label(bars, labels=[count_text(y) for y in ys], fontsize=style["bar"],
                         label_type="edge", rotation=90, padding=2)
        else:
            ax.bar_label(bars, fmt="%.3g", fontsize=style["bar"], label_type="center",
                         rotation=90 if width < 0.3 else 0)
        # n/a at the foot of the axes, in axes coordinates: a data y of 0 is minus infinity on
        # a log scale, and its text made the saved figure 112450 pixels high
        foot = ax.get_xaxis_transform()
        for pos in missing:
            ax.text(pos, 0.02, "n/a", rotation=90, ha="center", va="bottom", fontsize=7,
                    color=color, transform=foot)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(labels, fontsize=style["ticks"])
    shown = [g[k]["value"] for g in groups for k, _, _ in series
             if g[k] is not None and g[k]["value"] is not None and g[k]["value"] > 0]
    log = bool(shown) and max(shown) / min(shown) > 50
    if log:
        ax.set_yscale("log")  # emulated latencies can span decades (see docs/perf-compare.md)
        ylabel += ", log scale"
    if counts and shown:  # room above the tallest bar for its upright label
        ax.set_ylim(top=max(shown) * (8 if log else 1.3))
    ax.set_title(title, **style["title"])
    ax.set_ylabel(ylabel, fontsize=style["ticks"] + 1)
    ax.set_xlabel(xlabel, fontsize=style["ticks"] + 1)
    if spread:
        handles.append(plt_line_handle("min-max of the runs"))
    ax.legend(handles=handles, fontsize=style["legend"], loc="upper left",
              bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    ax.grid(axis="y", alpha=0.3)


def plt_line_handle(label):
    """A legend entry for the error bars."""
    from matplotlib.lines import Line2D
    return Line2D([], [], color="black", marker="_", markersize=10, linewidth=1, label=label)


def save(plt, fig, outdir, name):
    fig.tight_layout()
    # bbox "tight": the legends outside the axes are part of the picture
    fig.savefig(os.path.join(outdir, name), dpi=110, bbox_inches="tight")
    plt.close(fig)
    return name


def ratio_label(r, metric):
    """gdr_rc/rc_verbs under a group, in the table's words (report.py): the ratio as the table
    prints it ("1.02 [0.97-1.06]", "noisy [0.62-1.31]", "0.98 [1 pair]", "n/a") and, with more
    than one pair, the verdict."""
    from .report import fmt_ratio, verdict
    value, _, spread = fmt_ratio(r).partition(" ")
    label = f"gdr/rc {value}" + (f"\n{spread}" if spread else "")
    if r is not None and r.get("median") is not None and (r.get("pairs") or 0) > 1:
        label += f"\n{verdict(r, metric)}"
    return label


def wrapped(name, width=14):
    """A row name in lines of about `width` characters, broken after an underscore (the longest,
    recv_put_short_every_send_signaled, would run into its neighbours on one line)."""
    lines = [""]
    for part in name.split("_"):
        piece = part if not lines[-1] else "_" + part
        if lines[-1] and len(lines[-1]) + len(piece) > width:
            lines[-1] += "_"
            lines.append(part)
        else:
            lines[-1] += piece
    return "\n".join(lines)


def cost_label(t):
    """A cost row under its bars: operation, size and the exact ratio as the table prints it."""
    from .report import cost_ratio
    return (f"{wrapped(t['test'])}\n{size_label(t['size'])}\n"
            f"gdr/rc {cost_ratio(t['gdr_over_rc'])}")


def transport_plots(plt, outdir, table):
    """latency.png and bandwidth.png: rc_verbs, gdr_rc and raw verbs per test and size."""
    series = [("rc_verbs", "rc_verbs", "C0"), ("gdr_rc", "gdr_rc", "C1"),
              ("raw", "raw verbs (perftest)", "C2")]
    written = []
    for metric, name, title, ylabel in (
            (LAT, "latency.png", "Latency (wall clock)",
             "one-way latency, median (µs)\nlower is better"),
            (BW, "bandwidth.png", "Bandwidth (wall clock)",
             "bandwidth (MiB/s = 2^20 B/s)\nhigher is better")):
        groups = [t for t in table if t["metric"] == metric and t["section"] != "cost"]
        if not groups:
            continue
        fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(groups) + 2), 5))
        grouped_bars(ax, groups, series,
                     [f"{t['section']} {t['test']}\n{size_label(t['size'])}\n"
                      f"{ratio_label(t['gdr_over_rc'], metric)}" for t in groups],
                     title, ONE_PANEL, ylabel,
                     "API, test, message size\n(gdr/rc: median [min-max] of the pairs' ratios)")
        written.append(save(plt, fig, outdir, name))
    return written


def wrapper_plot(plt, outdir, wrapper):
    """wrapper.png: gdr_perftest vs ucx_perftest, latency and bandwidth side by side."""
    panels = [(m, [t for t in wrapper if t["metric"] == m]) for m in (LAT, BW)]
    panels = [(m, g) for m, g in panels if g]
    fig, axes = plt.subplots(1, len(panels), figsize=(4 + 1.6 * len(wrapper), 4.5), squeeze=False,
                             gridspec_kw=dict(width_ratios=[len(g) + 1 for _, g in panels]))
    for ax, (metric, groups) in zip(axes[0], panels):
        grouped_bars(ax, groups, [GDR_PERFTEST, ("ucx_perftest", "ucx_perftest", "C0")],
                     [f"{t['test']}\n{size_label(t['size'])}\n{t['transport']}" for t in groups],
                     "Latency" if metric == LAT else "Bandwidth", TWO_PANELS,
                     "median half round trip (µs)\nlower is better" if metric == LAT
                     else "bandwidth (MiB/s)\nhigher is better", "test, message size, transport")
    return [save(plt, fig, outdir, "wrapper.png")]


def coll_plot(plt, outdir, colls):
    """coll.png: ours vs MPI, time per call above, busbw below."""
    fig, axes = plt.subplots(2, 1, figsize=(max(7, 0.9 * len(colls) + 2), 8))
    labels = [f"{t['op']}\n{size_label(t['size'])}\nx{t['ranks']} {t['transport']}"
              for t in colls]
    xlabel = "collective, size, ranks, transport"
    grouped_bars(axes[0], [dict(ours=t["ours_time"], mpi=t["mpi_time"]) for t in colls],
                 COLL_SERIES, labels, "Time per call", TWO_PANELS,
                 "time per call, max over ranks (µs)\nlower is better", xlabel)
    grouped_bars(axes[1], [dict(ours=t["ours_busbw"], mpi=t["mpi_busbw"]) for t in colls],
                 COLL_SERIES, labels, "Bus bandwidth", TWO_PANELS,
                 "bus bandwidth (GB/s = 10^9 B/s)\nhigher is better", xlabel)
    return [save(plt, fig, outdir, "coll.png")]


COST_ROWS_PER_PANEL = 12  # a panel of the cost plot: every label readable at 110 dpi


def cost_plot(plt, outdir, table):
    """cost.png: exact instructions per operation, rc_verbs and gdr_rc per row, with the ratio;
    a full cost section (tens of rows) in panels of COST_ROWS_PER_PANEL one above the other, so
    that the picture grows in height by a panel, never in width past one panel's."""
    groups = [t for t in table if t["section"] == "cost" and t["metric"] == COST_METRICS[0]]
    if not groups:
        return []
    panels = [groups[i:i + COST_ROWS_PER_PANEL]
              for i in range(0, len(groups), COST_ROWS_PER_PANEL)]
    width = max(5, 1.1 * max(len(p) for p in panels) + 2)
    fig, axes = plt.subplots(len(panels), 1, figsize=(width, 5 * len(panels)), squeeze=False)
    for n, (ax, panel) in enumerate(zip(axes[:, 0], panels)):
        title = "Exact cost per operation (callgrind: counted, not timed)"
        if len(panels) > 1:
            title += f", rows {n * COST_ROWS_PER_PANEL + 1}-{n * COST_ROWS_PER_PANEL + len(panel)}"
        grouped_bars(ax, panel, [("rc_verbs", "rc_verbs", "C0"), ("gdr_rc", "gdr_rc", "C1")],
                     [cost_label(t) for t in panel], title, ONE_PANEL,
                     "instructions per call\nlower is better",
                     "operation, message size, gdr_rc/rc_verbs (posting side; recv_*: receiver)",
                     counts=True)
    return [save(plt, fig, outdir, "cost.png")]


def write_plots(outdir, table, wrapper, colls):
    """Every plot the tables allow; returns the file names written."""
    plt = pyplot()
    if plt is None:
        return []
    return (transport_plots(plt, outdir, table) + cost_plot(plt, outdir, table) +
            (wrapper_plot(plt, outdir, wrapper) if wrapper else []) +
            (coll_plot(plt, outdir, colls) if colls else []))
