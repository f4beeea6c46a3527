"""The command line of perf/compare/run, and the run: measure here or in the VM, then report."""

import argparse
import datetime
import json
import os
import re
import shlex
import socket
import sys
import time

from . import __doc__ as PACKAGE_DOC
from .devices import DOCTOR, DeviceError, device_names, doctor_report
from .launch import STALLED
from .plan import (DEMO_COST_OPS, DEMO_COST_ROWS, DEMO_PAIRS, DEMO_SECTIONS, DEMO_WALL,
                   NOT_QUICK, PAIR_SECTIONS, SECTIONS)
from .render import render
from .sections.cost import ROW_NAMES
from .session import Session
from .tools import find_tool
from .units import size_label
from .vm import measure_in_vm


def cost_rows(text):
    names = [n for n in text.split(",") if n]
    unknown = [n for n in names if n not in ROW_NAMES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown cost row(s) {','.join(unknown) or text!r}; "
                                         f"known: {','.join(ROW_NAMES)}")
    return names


def parse_args():
    summary = " ".join(PACKAGE_DOC.split("\n\n")[0].split())  # the first paragraph, one line
    p = argparse.ArgumentParser(description=summary,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--section", action="append", choices=SECTIONS,
                   help="run only this section (repeatable; default: all, without cost"
                   " with --quick)")
    p.add_argument("--test", action="append", metavar="TEST",
                   help="run only this test of the uct, ucp, raw and wrapper sections (their"
                   " table's name: put_bw, tag_lat, ib_write_bw ...; repeatable; default: all)")
    p.add_argument("--quick", action="store_true",
                   help="fewer iterations (a few minutes in the VM)")
    p.add_argument("--demo", action="store_true",
                   help="`make demo`: the cost section's regression rows (" +
                   ",".join(DEMO_COST_ROWS) + f", --cost-ops {DEMO_COST_OPS}) first, then " +
                   ", ".join(f"{s} {t} {size_label(z)}" for s, t, z in DEMO_WALL) +
                   f" with --quick iterations and --pairs {DEMO_PAIRS}, in one VM boot")
    p.add_argument("--out", help="results directory (default ./results/compare-<date>)")
    p.add_argument("--device",
                   help="DEV[:PORT] (default: $RXE_DEV or the first RDMA device, port 1)")
    p.add_argument("--gid-index", type=int,
                   help="GID index instead of gdr_rc's rule, judged by gdr-doctor (default: the "
                        "index gdr-doctor says gdr_rc uses); perftest gets it as -x on RoCE")
    p.add_argument("--pairs", "--repeat", type=int, dest="pairs", metavar="N",
                   help="run the two sides of each comparison N times in alternation (A B A B"
                   " ...); a row is the median, a ratio the median of the N per-pair ratios,"
                   " 'noisy' when they spread more than +-10%% (default 5, 1 with --quick)")
    p.add_argument("--timeout", type=int, metavar="S",
                   help="seconds a pair or launch may go without progress (no output, no "
                   "profile written) before it is ended (default 90 quick, 600 full; one that "
                   "keeps progressing runs up to 10x that). Through make: make demo "
                   "DEMO_ARGS='--timeout 300'")
    p.add_argument("--base-port", type=int, default=20000,
                   help="first TCP port for the pairs' OOB exchange")
    p.add_argument("--peer", metavar="HOST",
                   help="measure across a wire: each pair's server runs on HOST, its client "
                   "here (sections uct, ucp, raw; ucp gains UCP over tcp on the RoCE port's "
                   "interface as a third side). HOST sees this directory at the same path and "
                   "has the same device name (a shared file system; tests/fabric/run's guests)")
    p.add_argument("--peer-shell", default="ssh", metavar="CMD",
                   help="how a command reaches --peer's host: `CMD HOST COMMAND-LINE` "
                   "(default ssh)")
    p.add_argument("--vm", choices=("auto", "always", "never"), default="auto",
                   help="run inside tests/rxe-vm/run: auto = when no RDMA device is present")
    p.add_argument("--require-gdr", action="store_true",
                   help="judge the run by gdr_rc: exit 1 if any gdr_rc, wrapper or coll result "
                        "is n/a, while an n/a of the reference (rc_verbs, raw verbs) is reported "
                        "and does not fail it (default: only reference n/a rows fail)")
    p.add_argument("--gdr-doctor", metavar="PATH",
                   help="gdr-doctor, whose --json names the devices, ports and GID (default: "
                        "<build>/perf/doctor/gdr-doctor of GDR_PLUGIN=<build>/lib/libuct_gdr.so, "
                        "else PATH)")
    p.add_argument("--gdr-perftest", metavar="PATH",
                   help="gdr_perftest for wrapper/coll (default: <build>/perf/gdr_perftest/"
                        "gdr_perftest of GDR_PLUGIN=<build>/lib/libuct_gdr.so, else PATH)")
    p.add_argument("--provider-ops", metavar="PATH",
                   help="perf/cost/provider_ops for the cost section (default: next to the"
                   " plugin's build, or on PATH)")
    p.add_argument("--cost-rows", type=cost_rows, metavar="ROW[,ROW...]",
                   help="rows of the cost section (default: all: " + ",".join(ROW_NAMES) + ")")
    p.add_argument("--cost-ops", type=int, metavar="N",
                   help="cost section: operations per run (default 200; a row is the mean of "
                   "calls N/2+1 .. N-1)")
    p.add_argument("--cost-jobs", type=int, default=2, metavar="J",
                   help="cost section: pairs measured at a time (default 2: the VM's 2 CPUs)")
    p.add_argument("--coll-bench", metavar="PATH",
                   help="coll_bench for coll (default: <build>/perf/coll_bench/coll_bench, else "
                        "PATH)")
    p.add_argument("--coll-ranks", type=lambda t: [int(x) for x in t.split(",")],
                   metavar="N[,N...]",
                   help="ranks of the coll section (default 2 with --quick, else 2,4)")
    p.add_argument("--measure-only", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--host-loadavg", help=argparse.SUPPRESS)  # the host's copy (vm.py)
    p.add_argument("--render", metavar="DIR", help="only print/plot an existing results directory")
    return p.parse_args()


def machine_report(args):
    """gdr-doctor's report of this machine; the run stops (exit 1) without one."""
    doctor, why = find_tool(args.gdr_doctor, os.environ.get("GDR_PLUGIN", ""), DOCTOR,
                            "--gdr-doctor")
    try:
        if doctor is None:
            raise DeviceError(why)
        return doctor_report(doctor, args.gid_index)
    except DeviceError as e:
        sys.exit(f"compare: {e}")


def ours(row):
    """Rows whose n/a fails the run only with --require-gdr: gdr_rc's, and the wrapper and coll
    sections' (the project's own tools, which a build may lack)."""
    return row["transport"] == "gdr_rc" or row["section"] in ("wrapper", "coll")


def baseline_failures(rows):
    """The n/a rows that fail a run: not ours, and not n/a by the method in every run (the cost
    section's progress row has no verbs-call counts)."""
    return [r for r in rows if r["value"] is None and not ours(r) and not r.get("by_method")]


def wrong(row):
    """A data check that said WRONG (a transfer that moved the wrong bytes): a failure of the run
    in any section, never an n/a to read past."""
    return "WRONG" in (row.get("reason") or "")


def update_results(path, **meta):
    with open(path) as f:
        doc = json.load(f)
    doc["meta"].update(meta)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return doc


def main():
    args = parse_args()
    if args.render:
        render(args.render)
        return 0
    if args.demo:  # a preset: what the user gave explicitly stays
        args.quick = True
        args.section = args.section or list(DEMO_SECTIONS)
        args.cost_rows = args.cost_rows or list(DEMO_COST_ROWS)
        args.cost_ops = args.cost_ops or DEMO_COST_OPS
        args.pairs = args.pairs or DEMO_PAIRS
    sections = args.section or [s for s in SECTIONS if not (args.quick and s in NOT_QUICK)]
    if args.peer:
        across = [s for s in sections if s in PAIR_SECTIONS]
        if args.section and across != sections:
            sys.exit(f"compare: --peer measures pairs across the wire: sections "
                     f"{', '.join(PAIR_SECTIONS)}, not {', '.join(set(sections) - set(across))}")
        sections = across
    if args.pairs is None:
        args.pairs = 1 if args.quick else 5  # --quick: one pair, to stay within CI's time
    if args.pairs < 1:
        sys.exit(f"compare: --pairs {args.pairs}: needs at least 1")
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    args.out = os.path.abspath(args.out or os.path.join("results", f"compare-{stamp}"))
    os.makedirs(args.out, exist_ok=True)
    inside_vm = bool(os.environ.get("RXE_VM"))
    report = None if args.vm == "always" and not inside_vm else machine_report(args)
    use_vm = not inside_vm and (args.vm == "always" or
                                (args.vm == "auto" and not device_names(report)))
    results = os.path.join(args.out, "results.json")
    if use_vm and args.peer:
        sys.exit("compare: --peer needs an RDMA device on this host, as on its peer (on "
                 "tests/fabric/run's guests: tests/fabric/run ssh node0 'cd DIR && perf/compare/"
                 "run --peer node1 ...')")

    t0 = time.monotonic()
    load_start = os.getloadavg()  # TCG results swing with the host's load: keep it with them
    if use_vm:
        rc = measure_in_vm(args, sections)
        if rc != 0 or not os.path.exists(results):
            print(f"compare: the VM run failed (exit status {rc})", file=sys.stderr)
            return rc or 1
    else:
        session = Session(args, report)
        meta = session.run(sections)
        meta.update(date=stamp, host=socket.gethostname(), peer=args.peer, quick=args.quick,
                    sections=sections,
                    command=shlex.join(sys.argv))
        with open(results, "w") as f:
            json.dump(dict(meta=meta, rows=session.results.rows, ratios=session.results.ratios),
                      f, indent=1)
        if args.measure_only:
            return 0
    wall = round(time.monotonic() - t0, 1)
    doc = update_results(results, total_wall_s=wall, command=shlex.join(sys.argv),
                         host_loadavg_start=load_start, host_loadavg_end=os.getloadavg())
    files = render(args.out, quiet=True)
    return verdict(args, doc, wall, files)


def shown_path(path):
    """`path` relative to the current directory when it is below it (what a user can type)."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def verdict(args, doc, wall, files):
    """The end of the run: one line per kind of problem, where the files are, the exit status."""
    failed = baseline_failures(doc["rows"])
    gdr_missing = [r for r in doc["rows"] if r["value"] is None and ours(r)]
    wrong_rows = [r for r in doc["rows"] if wrong(r)]
    print()
    if failed:
        judged = " (reference only: not judged with --require-gdr)" if args.require_gdr else ""
        print(f"compare: {len(failed)} reference result(s) n/a{judged}; the notes above say why",
              file=sys.stderr)
    if gdr_missing:
        judged = "; --require-gdr: the run fails" if args.require_gdr else ""
        print(f"compare: {len(gdr_missing)} gdr_rc/wrapper/coll result(s) n/a{judged}",
              file=sys.stderr)
    for r in wrong_rows:
        print(f"compare: WRONG data: {r['section']} {r['transport']} {r.get('test', '')} "
              f"{r.get('size', '')}: {r['reason']}", file=sys.stderr)
    if any(re.search(STALLED, r.get("reason") or "") for r in failed + gdr_missing):
        print("compare: a pair was ended for lack of progress: on a loaded machine give it more "
              "time, --timeout S (make demo DEMO_ARGS='--timeout 300')", file=sys.stderr)
    out = shown_path(args.out)
    print(f"compare: {wall:.0f} s; results in {out}/: {', '.join(files)}; every peer's "
          f"output in {out}/logs/")
    bad = wrong_rows or (gdr_missing if args.require_gdr else failed)
    return 1 if bad else 0
