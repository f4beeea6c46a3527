"""Running the measurements inside the Soft-RoCE VM (tests/rxe-vm/run) when this machine has no
RDMA device: the VM measures (--measure-only) into the results directory, this side reports."""

import os
import subprocess

from .interleave import HOST_LOADAVG, HostLoadWriter

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(
    __file__)))))
RXE_VM_RUN = os.path.join(REPO, "tests", "rxe-vm", "run")
RUN = os.path.join(REPO, "perf", "compare", "run")


def measure_in_vm(args, sections):
    """The VM's exit status (124, 125: the VM harness failed)."""
    # The VM sees the host's / read-only and only the current directory writable (and under
    # /tmp nothing else at all): run it from the repository when the results go inside it
    # (the script and the plugin are then visible too), else from the results directory.
    out = os.path.realpath(args.out)
    share = REPO if (out + os.sep).startswith(os.path.realpath(REPO) + os.sep) else out
    # the guest's /proc/loadavg is not the host's: the host keeps a copy in the shared directory
    host_load = os.path.join(out, HOST_LOADAVG)
    cmd = [RUN, "--measure-only", "--out", out, "--vm", "never", "--base-port", str(args.base_port),
           "--host-loadavg", host_load]
    cmd += ["--quick"] if args.quick else []
    cmd += ["--demo"] if args.demo else []
    for s in sections:
        cmd += ["--section", s]
    for t in args.test or ():
        cmd += ["--test", t]
    for opt, val in (("--device", args.device), ("--gid-index", args.gid_index),
                     ("--timeout", args.timeout), ("--pairs", args.pairs),
                     ("--gdr-doctor", args.gdr_doctor and os.path.abspath(args.gdr_doctor)),
                     ("--gdr-perftest", args.gdr_perftest and os.path.abspath(args.gdr_perftest)),
                     ("--coll-bench", args.coll_bench and os.path.abspath(args.coll_bench)),
                     ("--provider-ops",
                      args.provider_ops and os.path.abspath(args.provider_ops)),
                     ("--coll-ranks", args.coll_ranks and ",".join(map(str, args.coll_ranks))),
                     ("--cost-rows", args.cost_rows and ",".join(args.cost_rows)),
                     ("--cost-ops", args.cost_ops), ("--cost-jobs", args.cost_jobs)):
        if val is not None:
            cmd += [opt, str(val)]
    env = dict(os.environ)
    if env.get("GDR_PLUGIN"):  # the VM run starts in the results directory
        env["GDR_PLUGIN"] = os.path.abspath(env["GDR_PLUGIN"])
    # the whole VM run's bound, a backstop: the pairs inside end when they stop progressing
    # (launch.py), so this only has to exceed a slow run -- times the pairs (each pair runs
    # every launch again); --demo takes 2-5 minutes, an hour leaves a loaded host its time
    env.setdefault("RXE_VM_TIMEOUT", str(3600 if args.demo else
                                         (1500 if args.quick else 5400) * max(1, args.pairs)))
    print(f"compare: no RDMA device here: running in the Soft-RoCE VM ({RXE_VM_RUN})", flush=True)
    with HostLoadWriter(host_load):
        return subprocess.run([RXE_VM_RUN] + cmd, cwd=share, env=env).returncode
