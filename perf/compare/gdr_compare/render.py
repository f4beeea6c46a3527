"""A results directory from its results.json: the report on stdout, the comparison tables added
to results.json, results.csv and the plots (also `run --render DIR`, again at any time)."""

import csv
import json
import os

from .plots import write_plots
from .report import print_report

CSV_FIELDS = ["section", "test", "size", "metric", "transport", "tool", "ranks", "value",
              "status", "reason", "samples", "loads", "wall_s", "log"]


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in rows:
            out = {k: r.get(k) for k in CSV_FIELDS}
            out["samples"] = " ".join(f"{v:g}" for v in r.get("samples") or [])
            out["loads"] = " ".join("-".join(f"{v:g}" for v in pair if v is not None)
                                    for pair in r.get("loads") or [])
            w.writerow(out)


def value(row):
    return row["value"] if row else None


def stats(r):
    """A ratio as the tables store it: median, min, max, pairs, spread, noisy (None: n/a)."""
    keys = ("median", "min", "max", "pairs", "spread", "noisy")
    return {k: r.get(k) for k in keys} if r else None


def comparisons(table, wrapper, colls):
    """The three tables with values instead of rows, as results.json stores them."""
    return dict(
        comparison=[
            dict(section=t["section"], test=t["test"], size=t["size"], metric=t["metric"],
                 rc_verbs=value(t["rc_verbs"]), gdr_rc=value(t["gdr_rc"]),
                 gdr_over_rc=stats(t["gdr_over_rc"]), raw_tool=t["raw_tool"],
                 raw=value(t["raw"]), rc_over_raw=stats(t["rc_over_raw"]),
                 gdr_over_raw=stats(t["gdr_over_raw"]), tcp=value(t["tcp"]),
                 rc_over_tcp=stats(t["rc_over_tcp"]), gdr_over_tcp=stats(t["gdr_over_tcp"]),
                 load=t["load"])
            for t in table],
        comparison_wrapper=[
            dict(test=t["test"], ucx_test=t["ucx_test"], size=t["size"], metric=t["metric"],
                 transport=t["transport"], gdr_perftest=value(t["gdr_perftest"]),
                 ucx_perftest=value(t["ucx_perftest"]),
                 wrapper_over_ucx=stats(t["wrapper_over_ucx"]), load=t["load"])
            for t in wrapper],
        comparison_coll=[
            dict(op=t["op"], ranks=t["ranks"], size=t["size"], block=t["block"],
                 transport=t["transport"], ours_time_us=value(t["ours_time"]),
                 mpi_time_us=value(t["mpi_time"]), time_ratio=stats(t["time_ratio"]),
                 ours_busbw_GBps=value(t["ours_busbw"]), mpi_busbw_GBps=value(t["mpi_busbw"]),
                 busbw_ratio=stats(t["busbw_ratio"]),
                 coll_bench_ours_time_us=value(t["coll_bench_time"]),
                 coll_bench_over_mpi=stats(t["coll_bench_over_mpi"]), load=t["load"])
            for t in colls])


def render(outdir, quiet=False):
    """The report, results.csv, the comparisons in results.json and the plots -> the names of
    the files written (said on the terminal unless quiet: the run says it at its end)."""
    path = os.path.join(outdir, "results.json")
    with open(path) as f:
        doc = json.load(f)
    table, wrapper, colls = print_report(doc)
    write_csv(os.path.join(outdir, "results.csv"), doc["rows"])
    doc.update(comparisons(table, wrapper, colls))
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    files = ["results.json", "results.csv"] + write_plots(outdir, table, wrapper, colls)
    if not quiet:
        print(f"compare: wrote {', '.join(files)} in {outdir}/")
    return files
