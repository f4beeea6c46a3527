"""coll: gdr_perftest's collectives (ucp_cpp::coll) next to MPI's, timed by coll_bench, both
under the same mpirun command line."""

import shutil

from ..launch import run_single
from ..measure import Launch
from ..parsers import (coll_bench_value, gdr_perftest_value, parse_coll_bench,
                       parse_gdr_perftest)
from ..plan import (COLL_BLOCKS_FULL, COLL_BLOCKS_QUICK, COLL_GROUPS, UCP_TLS, busbw, coll_size,
                    section_transports)
from ..units import BUSBW, TIME


def mpirun(s, ranks, transport):
    """The mpirun command line of both tools: Open MPI's pml ucx on the section's UCX_TLS
    (docs/openmpi.md), the plugin preloaded into the ranks for gdr_rc."""
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks),
           "--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any", "--mca", "pml_ucx_devices", "any",
           "--mca", "btl", "self", "--mca", "osc", "ucx"]
    exported = dict(UCX_TLS=UCP_TLS[transport], UCX_NET_DEVICES=s.net_device,
                    UCX_UD_VERBS_ETH_DGID_CHECK="n", UCX_WARN_UNUSED_ENV_VARS="n")
    if transport == "gdr_rc":
        exported["LD_PRELOAD"] = s.gdr_plugin
    for key, value in exported.items():
        cmd += ["-x", f"{key}={value}"]
    return cmd


def gdr_once(s, ops, blocks, ranks, transport, n, w):
    """One gdr_perftest launch under mpirun for `ops` (all with the same size convention)."""
    sizes = [coll_size(ops[0], b, ranks) for b in blocks]

    def once(log_name):
        port = s.ports.take()
        cmd = mpirun(s, ranks, transport) + [
            s.gdr_perftest, "-p", str(port), "-t", ",".join(ops),
            "-s", ",".join(map(str, sizes)), "-n", str(n), "-w", str(w), "-c", "0",
            "--timeout", str(s.timeout)]
        ok, out, reason, wall = run_single(log_name, cmd, s.base_env("rc_verbs"),
                                           s.timeout + 30, s.logdir)
        tables = parse_gdr_perftest(out)
        results = []
        for op in ops:
            for size in sizes:
                value, why = gdr_perftest_value(tables, op, size, TIME)
                if not ok:
                    value, why = None, reason
                results += [(value, why), (busbw(op, size, ranks, value), why)]
        return results, wall
    return once


def mpi_once(s, op, blocks, ranks, transport, n):
    """One coll_bench launch: MPI's collective and ucp_cpp::coll's, in the same job."""
    def once(log_name):
        cmd = mpirun(s, ranks, transport) + [
            s.coll_bench, "--op", op, "--max-size", str(max(blocks)), "--iterations", str(n)]
        ok, out, reason, wall = run_single(log_name, cmd, s.base_env("rc_verbs"),
                                           s.timeout + 30, s.logdir)
        _, _, rows = parse_coll_bench(out)
        results = []
        for block in blocks:
            size = coll_size(op, block, ranks)
            mpi, why_mpi = coll_bench_value(rows, block, "mpi_us")
            ours, why_ours = coll_bench_value(rows, block, "ours_us")
            if not ok:
                (mpi, why_mpi), (ours, why_ours) = (None, reason), (None, reason)
            results += [(mpi, why_mpi), (busbw(op, size, ranks, mpi), why_mpi),
                        (ours, why_ours)]
        return results, wall
    return once


def coll_ratios(gdr_specs, cb_specs):
    """Per collective and size: coll_bench's own ucp_cpp::coll time against MPI's (one launch)
    and, when gdr_perftest runs (gdr_specs), ours/MPI time and busbw (its launch against
    coll_bench's)."""
    ratios = []
    for mpi_t, mpi_b, cb_t in zip(cb_specs[0::3], cb_specs[1::3], cb_specs[2::3]):
        ratios.append(("coll_bench ours/MPI time", cb_t, mpi_t))
        ours = {g["metric"]: g for g in gdr_specs or ()
                if (g["test"], g["size"]) == (mpi_t["test"], mpi_t["size"])}
        if ours:
            ratios += [("ours/MPI time", ours[TIME], mpi_t),
                       ("ours/MPI busbw", ours[BUSBW], mpi_b)]
    return ratios


def run_coll(s):
    """Per rank count, transport and size convention: one gdr_perftest launch for its
    collectives and one coll_bench launch per collective, interleaved pair by pair."""
    n, w = s.iters.coll()
    blocks = COLL_BLOCKS_QUICK if s.args.quick else COLL_BLOCKS_FULL
    no_mpirun = None if shutil.which("mpirun") else "mpirun not installed (openmpi-bin)"
    for ranks in s.coll_ranks:
        for transport in section_transports(s.args.quick):
            gdr = transport == "gdr_rc" and s.gdr_unavailable
            for ops in COLL_GROUPS:  # one gdr_perftest launch per size convention
                launches, ratios = [], []
                gdr_specs = [dict(section="coll", test=op, size=coll_size(op, b, ranks),
                                  metric=metric, transport=transport, tool="gdr_perftest",
                                  ranks=ranks)
                             for op in ops for b in blocks for metric in (TIME, BUSBW)]
                why_gdr = no_mpirun or s.gdr_perftest_missing or gdr
                if why_gdr:
                    s.results.unmeasured(gdr_specs, why_gdr)
                else:
                    launches.append(Launch(
                        f"coll-{transport}-np{ranks}-gdr_perftest-{'-'.join(ops)}", gdr_specs,
                        gdr_once(s, list(ops), blocks, ranks, transport, n, w)))
                for op in ops:
                    cb_specs = []
                    for b in blocks:
                        key = dict(section="coll", test=op, size=coll_size(op, b, ranks),
                                   transport=transport, ranks=ranks)
                        cb_specs += [dict(key, metric=TIME, tool="mpi"),
                                     dict(key, metric=BUSBW, tool="mpi"),
                                     dict(key, metric=TIME, tool="coll_bench")]
                    why = no_mpirun or s.coll_bench_missing or gdr
                    if why:
                        s.results.unmeasured(cb_specs, why)
                        continue
                    launches.append(Launch(f"coll-{transport}-np{ranks}-coll_bench-{op}",
                                           cb_specs, mpi_once(s, op, blocks, ranks, transport, n)))
                    ratios += coll_ratios(None if why_gdr else gdr_specs, cb_specs)
                if launches:
                    s.results.interleave(launches, ratios)
