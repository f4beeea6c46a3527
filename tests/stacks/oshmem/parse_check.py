#!/usr/bin/env python3
"""tests/stacks/oshmem/parse_check.py: one shmem_check job's log -> TSV rows (tests/stacks/oshmem/run).

  parse_check.py LOG NP RC WALL_S PREFIX SUFFIX NAME...

NAME... are the checks the job was asked to run (--only), in order.  Prints one TSV row
`PREFIX.NAME.SUFFIX<TAB>result<TAB>seconds<TAB>note` for every check the job decided, then one
line `REST name,...` with the checks to run again in a new job (those after a check the job
ended in), and a line `FINALIZE <result><TAB><note>` when the job got through all of them.

A check passes when every PE printed `CHECK name pe ok`; any FAIL line fails it (the first
one's detail is the note).  The check the job ended in (no verdict from every PE) is a timeout
when a PE printed `TIMEOUT name` (shmem_check's own watchdog) or RC is 124 (the driver's
`timeout`), otherwise a failure with the exit status and the first crash line of the log.
A job that ended before its first check decides all of them (failed, with the reason): the
driver's loop always progresses.
"""
import re
import sys

CRASH = re.compile(r"stack smashing|Segmentation fault|Caught signal|Aborted|exited on signal|"
                   r"UCX +(ERROR|FATAL)|shmem_check: .*")


def main(argv):
    log, np_, rc, wall, prefix, suffix = argv[1], int(argv[2]), int(argv[3]), float(argv[4]), argv[5], argv[6]
    names = argv[7:]
    begin, verdicts, timeouts, done = {}, {}, set(), set()
    crash = ""
    with open(log, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            fields = line.split(" ", 4)
            if fields[0] == "BEGIN" and len(fields) >= 3:
                begin[fields[1]] = float(fields[2])
            elif fields[0] == "CHECK" and len(fields) >= 4:
                verdicts.setdefault(fields[1], {})[int(fields[2])] = (
                    fields[3] == "ok", fields[4] if len(fields) > 4 else "")
            elif fields[0] == "TIMEOUT" and len(fields) >= 2:
                timeouts.add(fields[1])
            elif fields[0] == "DONE" and len(fields) >= 2:
                done.add(int(fields[1]))
            elif not crash and CRASH.search(line):
                crash = re.sub(r"\s+", " ", line.strip())[:140]

    order = names + ["finalize"]

    def seconds(name):
        if name not in begin:
            return 0.0
        later = [begin[n] for n in order[order.index(name) + 1:] if n in begin]
        return max(0.0, (later[0] if later else wall) - begin[name])

    def row(name, result, note):
        note = note.replace("\t", " ")
        print(f"{prefix}.{name}.{suffix}\t{result}\t{seconds(name):.1f}\t{note}")

    for i, name in enumerate(names):
        got = verdicts.get(name, {})
        bad = sorted(pe for pe, (ok, _) in got.items() if not ok)
        if bad:
            row(name, "fail", f"PE {bad[0]}: {got[bad[0]][1]}")
            continue
        if len(got) == np_:
            pe0 = got.get(0, (True, ""))[1]
            row(name, "pass", pe0)
            continue
        # the job ended in this check
        why = f"exit {rc}" + (f": {crash}" if crash else "")
        if name in timeouts or rc == 124:
            row(name, "timeout", f"no verdict from {np_ - len(got)} of {np_} PEs ({why})")
        elif name not in begin and i == 0:
            for n in names:
                row(n, "fail", f"the job ended before its first check ({why})")
            print("REST ")
            return 0
        else:
            row(name, "fail", f"the job ended in this check ({why})")
        print("REST " + ",".join(names[i + 1:]))
        return 0
    print("REST ")
    if len(done) == np_ and rc in (0, 1) and not ("finalize" in timeouts):
        print(f"FINALIZE pass\tall {np_} PEs through shmem_finalize, exit {rc}, job {wall:.0f} s")
    else:
        why = f"exit {rc}" + (f": {crash}" if crash else "")
        print(f"FINALIZE {'timeout' if rc == 124 or 'finalize' in timeouts else 'fail'}\t"
              f"{len(done)} of {np_} PEs reached DONE ({why})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
