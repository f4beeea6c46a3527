"""registration (part of the cost section): what one memory registration costs through the gdr
md of a device (gdr_<device>: one md per device) next to UCX's own ib md of the same device,
per call, for a miss and a hit of the registration cache, deregistration, and rkey unpack.

perf/bench/gdr_reg_bench -c runs the phases, each COUNT calls on COUNT distinct buffers:
reg_uncached / dereg_uncached (RCACHE=n: ibv_reg_mr / ibv_dereg_mr on the md's device),
reg_miss (RCACHE=y, a range the cache has not seen), reg_hit (the same ranges again),
dereg_cached (a put: the region stays cached), rkey_unpack (uct_rkey_unpack + release).
Instructions: under callgrind with --collect-atstart=no the tool collects each phase alone and
dumps it (CALLGRIND_DUMP_STATS_AT), so a phase's dump total over COUNT is exact per call, with
no start-up cost in it.  Time: the same phases run plainly, timed by the tool (steady_clock, per
call; under TCG the guest's clock follows the host's load: compare rows of one run only).

Rows: section "cost", test "<phase>", metrics instr_per_op and time_ns_per_op; transport rc_verbs
is UCX's ib md (what rc_verbs registers with), gdr_rc is the gdr md of the same device."""

import os
import re
import shutil
import subprocess
import time

from ..callgrind import parse
from ..tools import find_tool
from ..units import KiB, UNIT

PHASES = ("reg_uncached", "dereg_uncached", "reg_miss", "reg_hit", "dereg_cached",
          "rkey_unpack")
SIZE = 64 * KiB  # pins 16 pages: per-page work shows, and it stays quick under TCG
COUNT = 50
INSTR, TIME = "instr_per_op", "time_ns_per_op"
UNIT.setdefault(TIME, "ns/op")  # this section's own metric (units.py lists the shared ones)
PHASE_LINE = re.compile(r"phase=(\w+) calls=(\d+) size=(\d+) devices=(\d+) ns_per_call=([\d.]+)")
UNAVAILABLE = re.compile(r"phase=(\w+) unavailable: (.*)")
DUMP_TRIGGER = re.compile(r"^desc: Trigger: Client Request: phase-(\w+)", re.M)


def md_spec(s, transport):
    """gdr_reg_bench -m: the md that transport registers with on the session's device."""
    if transport == "gdr_rc":
        return f"gdr:gdr_{s.port.device}"
    return f"ib:{s.port.device}"


def timed(output):
    """gdr_reg_bench -c's lines -> {phase: ns per call}."""
    return {m.group(1): float(m.group(5)) for m in PHASE_LINE.finditer(output)}


def unavailable(output):
    """gdr_reg_bench -c's lines -> {phase: why it did not run} (no cache under valgrind)."""
    return {m.group(1): m.group(2).strip() for m in UNAVAILABLE.finditer(output)}


def counted(paths):
    """Callgrind dumps of one run -> {phase: instructions per call}."""
    per_call = {}
    for path in paths:
        with open(path, errors="replace") as f:  # names are the program's bytes, not UTF-8
            text = f.read()
        m = DUMP_TRIGGER.search(text)
        if m:
            per_call[m.group(1)] = parse(text).total / COUNT
    return per_call


def run_tool(s, transport, name, callgrind):
    """One gdr_reg_bench -c run -> ({phase: value}, {phase: why not}, reason or None, wall)."""
    cmd = [s.reg_bench, "-c", "-k", str(COUNT), "-s", str(SIZE), "-m", md_spec(s, transport)]
    out_base = os.path.join(s.logdir, f"{name}.callgrind.out")
    if callgrind:
        for old in os.listdir(s.logdir):
            if old.startswith(os.path.basename(out_base)):
                os.remove(os.path.join(s.logdir, old))
        cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--dump-instr=no",
               "--collect-jumps=no", f"--callgrind-out-file={out_base}"] + cmd
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, env=s.base_env("rc_verbs"), text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=s.timeout)
    except subprocess.TimeoutExpired:
        return {}, {}, f"gdr_reg_bench timed out after {s.timeout} s", time.monotonic() - t0
    wall = time.monotonic() - t0
    with open(os.path.join(s.logdir, name + ".log"), "w") as f:
        f.write(proc.stdout)
    if proc.returncode != 0:
        lines = proc.stdout.strip().splitlines()
        return {}, {}, f"gdr_reg_bench exited {proc.returncode}: {lines[-1] if lines else ''}", wall
    if not callgrind:
        return timed(proc.stdout), unavailable(proc.stdout), None, wall
    dumps = [os.path.join(s.logdir, f) for f in sorted(os.listdir(s.logdir))
             if f.startswith(os.path.basename(out_base) + ".")]
    return counted(dumps), unavailable(proc.stdout), None, wall


def run_registration(s):
    s.reg_bench, missing = find_tool(None, s.gdr_plugin, ("perf", "bench", "gdr_reg_bench"),
                                     "GDR_PLUGIN's build")
    for transport in ("rc_verbs", "gdr_rc"):
        why_all = missing or (transport == "gdr_rc" and s.gdr_unavailable)
        for metric, callgrind in ((INSTR, True), (TIME, False)):
            why = why_all or (callgrind and not shutil.which("valgrind")
                              and "valgrind not installed (apt-get install valgrind)")
            name = f"cost-registration-{transport}-{'callgrind' if callgrind else 'time'}"
            values, not_run, wall = {}, {}, 0.0
            if not why:
                values, not_run, why, wall = run_tool(s, transport, name, callgrind)
            for phase in PHASES:
                value = values.get(phase)
                reason = None if value is not None else \
                    (why or not_run.get(phase) or f"no {phase} phase")
                s.results.record("cost", phase, SIZE, metric, transport, value, reason, wall,
                                 name, tool="callgrind" if callgrind else "gdr_reg_bench")
