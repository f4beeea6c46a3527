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


def grouped_bars(ax, groups, series, labels, title, style):
    """One bar per series per group (a group: dict series key -> row or None); a series with no
    row in any group is left out, an n/a row is marked, never drawn."""
    from matplotlib.patches import Patch
    width = 0.8 / len(series)
    handles = []  # built by hand: an all-n/a series has no bar to take its colour from
    for i, (key, label, color) in enumerate(series):
        xs, ys, missing = [], [], []
        for x, group in enumerate(groups):
            row = group[key]
            pos = x + (i - (len(series) - 1) / 2) * width
            if row is not None and row["value"] is not None:
                xs.append(pos)
                ys.append(row["value"])
            elif row is not None:
                missing.append(pos)
        if not xs and not missing:
            continue
        bars = ax.bar(xs, ys, width, color=color)
        handles.append(Patch(color=color,
                             label=label + (f" ({len(missing)} n/a)" if missing else "")))
        ax.bar_label(bars, fmt="%.3g", fontsize=style["bar"])
        for pos in missing:
            ax.text(pos, 0, "n/a", rotation=90, ha="center", va="bottom", fontsize=7, color=color)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(labels, fontsize=style["ticks"])
    shown = [g[k]["value"] for g in groups for k, _, _ in series
             if g[k] is not None and g[k]["value"] is not None and g[k]["value"] > 0]
    if shown and max(shown) / min(shown) > 50:
        ax.set_yscale("log")  # emulated latencies can span decades (see docs/perf-compare.md)
        title += ", log scale"
    ax.set_title(title, **style["title"])
    ax.legend(handles=handles, fontsize=style["legend"])
    ax.grid(axis="y", alpha=0.3)


def save(plt, fig, outdir, name):
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, name), dpi=110)
    plt.close(fig)
    return name


def transport_plots(plt, outdir, table):
    """latency.png and bandwidth.png: rc_verbs, gdr_rc and raw verbs per test and size."""
    series = [("rc_verbs", "rc_verbs", "C0"), ("gdr_rc", "gdr_rc", "C1"),
              ("raw", "raw verbs (perftest)", "C2")]
    written = []
    for metric, name, title in (
            (LAT, "latency.png", "Latency, median one-way (us), lower is better"),
            (BW, "bandwidth.png", "Bandwidth (MiB/s), higher is better")):
        groups = [t for t in table if t["metric"] == metric]
        if not groups:
            continue
        fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(groups) + 2), 4.5))
        grouped_bars(ax, groups, series,
                     [f"{t['section']} {t['test']}\n{size_label(t['size'])}" for t in groups],
                     title, ONE_PANEL)
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
                     "Latency, median half round trip (us), lower is better" if metric == LAT
                     else "Bandwidth (MiB/s), higher is better", TWO_PANELS)
    return [save(plt, fig, outdir, "wrapper.png")]


def coll_plot(plt, outdir, colls):
    """coll.png: ours vs MPI, time per call above, busbw below."""
    fig, axes = plt.subplots(2, 1, figsize=(max(7, 0.9 * len(colls) + 2), 8))
    labels = [f"{t['op']}\n{size_label(t['size'])}\nx{t['ranks']} {t['transport']}"
              for t in colls]
    grouped_bars(axes[0], [dict(ours=t["ours_time"], mpi=t["mpi_time"]) for t in colls],
                 COLL_SERIES, labels, "Time per call (us), lower is better", TWO_PANELS)
    grouped_bars(axes[1], [dict(ours=t["ours_busbw"], mpi=t["mpi_busbw"]) for t in colls],
                 COLL_SERIES, labels, "Bus bandwidth (GB/s), higher is better", TWO_PANELS)
    return [save(plt, fig, outdir, "coll.png")]


def cost_plot(plt, outdir, table):
    """cost.png: exact instructions per operation, rc_verbs and gdr_rc per row, with the ratio."""
    groups = [t for t in table if t["section"] == "cost" and t["metric"] == COST_METRICS[0]]
    if not groups:
        return []
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(groups) + 2), 4.5))
    grouped_bars(ax, groups, [("rc_verbs", "rc_verbs", "C0"), ("gdr_rc", "gdr_rc", "C1")],
                 [f"{t['test']}\n{size_label(t['size'])}\n"
                  f"{'n/a' if t['gdr_over_rc'] is None else format(t['gdr_over_rc']['median'], '.3f')}"
                  for t in groups],
                 "Instructions per operation (callgrind), lower is better: posting side; recv_*: "
                 "receiving side;\niface_progress: one idle call; under each row: gdr_rc / "
                 "rc_verbs", ONE_PANEL)
    return [save(plt, fig, outdir, "cost.png")]


def write_plots(outdir, table, wrapper, colls):
    """Every plot the tables allow; returns the file names written."""
    plt = pyplot()
    if plt is None:
        return []
    return (transport_plots(plt, outdir, table) + cost_plot(plt, outdir, table) +
            (wrapper_plot(plt, outdir, wrapper) if wrapper else []) +
            (coll_plot(plt, outdir, colls) if colls else []))
