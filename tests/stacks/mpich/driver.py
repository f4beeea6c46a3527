#!/usr/bin/env python3
"""tests/stacks/mpich/driver.py: MPICH's own test suite (test/mpi) over one UCX transport.

  driver.py list --build MPI_BUILD [--set ci|full] [--maxnp N]
  driver.py run  --build MPI_BUILD --tl TL --tsv FILE --logs DIR [--set ci|full] [--maxnp N]
                 [--only GLOB,...] [--cases FILE] [--plugin SO] [--hosts H1,H2,...]

MPI_BUILD is the configured and built test/mpi tree (prepare's BUILD_DIR/stacks/mpich/mpi), with
its `srcdir` (config.status).  The cases are the lines of the testlist files of DIRS (MPICH's
format, as its runtests reads them: `program np [key=value ...]`, arg= an argument, env= a
variable, timeLimit= seconds, mem= GB, xfail= a known MPICH failure, resultTest= how to judge), one case a
line, named `dir/program.npN` followed by `:arg`/`:VAR=value` for each argument and variable.

Each case is one `mpiexec.mpich -n N ./program args` in its build directory (with --hosts:
`-launcher ssh -hosts H1,H2,...`, one slot a host, so ranks go round the hosts: rank 0 on H1, rank 1
on H2, ...; the build tree at the same path on every host, as tests/fabric's nodes share it), bounded by hydra's
MPIEXEC_TIMEOUT (120 s, or 3x the line's timeLimit, at most 300) and, behind it, timeout(1).  It passes as runtests judges: exit status 0 and
stdout+stderr made only of " No Errors" (and "Test Passed") lines (resultTest=TestStatus: a
non-zero exit; TestErrFatal: a non-zero exit whatever the output), UCX's own INFO lines aside.
UCX_LOG_LEVEL=info (set by `run`) makes UCP print each endpoint's lanes: a case with a lane on a
transport other than TL (ud_verbs only as the wireup lane) fails; the note says whose lanes were
seen.  Skipped, with the reason in the note: xfail lines (runtests skips them by default), more
ranks than --maxnp (the VM's 2 vCPUs), more memory than 1 GB (mem=), a program that prepare did not build.

--set ci is the cases listed in ci.txt (next to this file); full is every case of DIRS.
--cases FILE keeps, of the set, only the cases FILE names (one exact name a line: tests/stacks/check
re-runs over rc_verbs the cases gdr_rc did not pass); --only, the cases matching a glob.
Exit status: 0 when the cases ran (failures are data), 2 on a setup error.
"""
import argparse
import fnmatch
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DIRS = ("init", "attr", "errhan", "comm", "datatype", "pt2pt", "coll", "rma",
        "threads/pt2pt", "threads/comm", "threads/init", "threads/coll", "threads/rma",
        "threads/mpi_t")
DEFAULT_TIMEOUT = 120   # s a case (runtests: 180 on real hardware)
TCG_FACTOR = 3          # timeLimit=T lines get 3T (at least 30 s): the VM is 5-20x slower
MAX_TIMEOUT = 300
MAX_MEM_GB = 1.0        # mem=G lines (GB the job needs) above this are skips in a 3 GB VM
UCX_LINE = re.compile(r"^\[\d+\.\d+\] \[[^\]]*\] +\S+:\d+ +UCX +(INFO|DIAG|DEBUG|TRACE)\b")
EP_CFG = re.compile(r"(?:ep_cfg\[\d+\]:|(?:intra|inter)-node cfg#\d+)\s+(.*)$")
LANE = re.compile(r"(\w+)\(([^)]*)\)")   # feature(tl/dev tl/dev ...)


class Case:
    def __init__(self, d, prog, np_, opts, args, envs):
        self.dir, self.prog, self.np, self.opts, self.args, self.envs = d, prog, np_, opts, args, envs
        self.name = f"{d}/{prog}.np{np_}" + "".join(":" + x for x in args + envs)


def srcdir(build):
    for line in open(os.path.join(build, "Makefile"), encoding="utf-8"):
        if line.startswith("srcdir = "):
            s = line.split("=", 1)[1].strip()
            return s if os.path.isabs(s) else os.path.normpath(os.path.join(build, s))
    raise SystemExit("driver: no srcdir in the build's Makefile")


def cases(build):
    src = srcdir(build)
    out = []
    for d in DIRS:
        path = next((p for p in (os.path.join(build, d, "testlist"), os.path.join(src, d, "testlist"))
                     if os.path.exists(p)), None)
        if path is None:
            continue
        lines = open(path, encoding="utf-8").read().splitlines()
        for line in lines:
            line = line.split("#", 1)[0].strip()
            f = line.split()
            if len(f) < 2 or not f[1].isdigit():
                continue   # a subdirectory or an unsubstituted @dir@ line
            opts, args, envs = {}, [], []
            for tok in f[2:]:
                if "=" not in tok:
                    continue   # (dtpools lines carry the test's source path)
                k, v = tok.split("=", 1)
                if k == "arg":
                    args.append(v)
                elif k == "env":
                    envs.append(v)
                else:
                    opts[k] = v
            out.append(Case(d, f[0], int(f[1]), opts, args, envs))
    seen = set()
    for c in out:   # names are the TSV's keys: a repeated line gets a suffix
        n, base = 2, c.name
        while c.name in seen:
            c.name, n = f"{base}~{n}", n + 1
        seen.add(c.name)
    return out


def ci_names():
    with open(os.path.join(HERE, "ci.txt"), encoding="utf-8") as f:
        return [l.split("#", 1)[0].strip() for l in f if l.split("#", 1)[0].strip()]


def select(all_cases, set_, only, cases_file=None):
    if set_ == "ci":
        names = ci_names()
        by = {c.name: c for c in all_cases}
        missing = [n for n in names if n not in by]
        if missing:
            raise SystemExit(f"driver: ci.txt names unknown cases: {' '.join(missing)}")
        chosen = [by[n] for n in names]
    else:
        chosen = all_cases
    if only:
        globs = only.split(",")
        chosen = [c for c in chosen if any(fnmatch.fnmatchcase(c.name, g) for g in globs)]
    if cases_file:
        with open(cases_file, encoding="utf-8") as f:
            names = {l.rstrip("\n") for l in f if l.strip()}
        chosen = [c for c in chosen if c.name in names]
    return chosen


def judge(case, rc, text, tl):
    """(result, note) as runtests judges the output, and the lanes checked."""
    lanes, other, body = set(), set(), []
    for line in text.splitlines():
        if UCX_LINE.match(line):
            m = EP_CFG.search(line)
            if m:
                for feat, tls in LANE.findall(m.group(1)):
                    for t in (x.split("/", 1)[0] for x in tls.split()):
                        if t == tl or (t == "ud_verbs" and feat == "wireup"):
                            lanes.add(f"{feat}({t})")
                        else:
                            other.add(f"{feat}({t})")
            continue
        body.append(line)
    lane_note = ("lanes " + " ".join(sorted(lanes))) if lanes else "no ep_cfg line"
    if other:
        return "fail", f"lanes off {tl}: {' '.join(sorted(other))}"
    rt = case.opts.get("resultTest", "")
    unexpected = [l for l in body if l.strip() and not re.match(r"^\s*(No [Ee]rrors|Test Passed)\s*$", l)]
    no_errors = any(re.match(r"^\s*No [Ee]rrors\s*$", l) for l in body)
    first = (unexpected[0].strip()[:110] if unexpected else "")
    if rt == "TestErrFatal":
        return ("pass", f"non-zero exit {rc} as expected; {lane_note}") if rc != 0 else \
            ("fail", "exit 0, expected a fatal error")
    if rt == "TestStatus":
        if rc == 0:
            return "fail", "exit 0, expected a non-zero status"
        return ("fail", f"unexpected output: {first}") if unexpected else ("pass", f"exit {rc} as expected; {lane_note}")
    if rt == "TestStatusNoErrors":
        if rc == 0:
            return "fail", "exit 0, expected a non-zero status"
    elif rc != 0:
        return "fail", f"exit {rc}" + (f": {first}" if first else "")
    if unexpected:
        return "fail", f"unexpected output: {first}"
    if not no_errors:
        return "fail", "no 'No Errors' line"
    return "pass", lane_note


def run(a):
    build = os.path.abspath(a.build)
    chosen = select(cases(build), a.set, a.only, a.cases)
    os.makedirs(a.logs, exist_ok=True)
    npass = nfail = nskip = 0
    with open(a.tsv, "a", encoding="utf-8") as tsv:
        for c in chosen:
            log = os.path.join(a.logs, re.sub(r"[^\w.=:,~-]", "_", c.name) + ".log")
            exe = os.path.join(build, c.dir, c.prog)
            skip = None
            if "xfail" in c.opts:
                skip = f"xfail in MPICH's testlist ({c.opts['xfail']})"
            elif c.np > a.maxnp:
                skip = f"needs {c.np} ranks, the cap is {a.maxnp} (the VM's 2 vCPUs)"
            elif float(c.opts.get("mem", 0)) > MAX_MEM_GB:
                skip = f"needs {c.opts['mem']} GB (mem= in the testlist), the cap is {MAX_MEM_GB}"
            elif not os.access(exe, os.X_OK):
                skip = "not built by prepare"
            if skip:
                row, secs = ("skip", skip), 0.0
            else:
                limit = DEFAULT_TIMEOUT
                if c.opts.get("timeLimit", "").isdigit():
                    limit = min(MAX_TIMEOUT, max(30, TCG_FACTOR * int(c.opts["timeLimit"])))
                env = dict(os.environ)
                env.pop("LD_PRELOAD", None)   # the plugin goes to the ranks only (-genv), not hydra
                env["MPIEXEC_TIMEOUT"] = str(limit)   # hydra ends the job itself
                for e in c.envs:
                    k, v = e.split("=", 1)
                    env[k] = v
                cmd = ["mpiexec.mpich", "-n", str(c.np)]
                if a.hosts:
                    cmd += ["-launcher", "ssh", "-hosts", a.hosts]
                if a.plugin:
                    cmd += ["-genv", "LD_PRELOAD", a.plugin]
                cmd += ["./" + c.prog] + c.args
                start = time.monotonic()
                with open(log, "w", encoding="utf-8") as lf:
                    lf.write(f"# {' '.join(c.envs)} {' '.join(cmd)}  (cwd {c.dir}, limit {limit} s)\n")
                    lf.flush()
                    p = subprocess.run(["timeout", "-k", "10", str(limit + 20)] + cmd, cwd=os.path.dirname(exe),
                                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                    out = p.stdout.decode("utf-8", "replace")
                    lf.write(out)
                secs = time.monotonic() - start
                if c.opts.get("resultTest") == "TestErrFatal":
                    row = judge(c, p.returncode, out, a.tl)   # (init/timeout: hydra's kill is the pass)
                elif p.returncode == 124 or secs >= limit or "APPLICATION TIMED OUT" in out:
                    row = ("timeout", f"no end within {limit} s")
                else:
                    row = judge(c, p.returncode, out, a.tl)
            npass += row[0] == "pass"
            nfail += row[0] in ("fail", "timeout")
            nskip += row[0] == "skip"
            note = row[1].replace("\t", " ").replace("\n", " ")
            tsv.write(f"{c.name}\t{row[0]}\t{secs:.1f}\t{note}\n")
            tsv.flush()
            print(f"mpich {a.tl} {c.name}: {row[0]} {secs:.1f} s ({note})", flush=True)
    print(f"mpich over {a.tl}: {npass} passed, {nfail} failed, {nskip} skipped of {len(chosen)}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=("list", "run"))
    ap.add_argument("--build", required=True)
    ap.add_argument("--set", choices=("ci", "full"), default="full")
    ap.add_argument("--maxnp", type=int, default=4)
    ap.add_argument("--only")
    ap.add_argument("--cases")
    ap.add_argument("--tl")
    ap.add_argument("--tsv")
    ap.add_argument("--logs")
    ap.add_argument("--plugin")
    ap.add_argument("--hosts")
    a = ap.parse_args()
    if a.mode == "list":
        for c in select(cases(os.path.abspath(a.build)), a.set, a.only, a.cases):
            print(f"{c.name}\t{c.np}\t{' '.join(f'{k}={v}' for k, v in c.opts.items())}")
        return 0
    if not (a.tl and a.tsv and a.logs):
        print("driver: run needs --tl, --tsv, --logs", file=sys.stderr)
        return 2
    return run(a)


if __name__ == "__main__":
    sys.exit(main())
