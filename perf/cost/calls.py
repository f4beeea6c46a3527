#!/usr/bin/env python3
"""Per-call inclusive instructions of the UCT op functions in callgrind output files."""
import collections
import re
import subprocess
import sys

OPS = re.compile(r"(gdr_ep_(put|am)_short|uct_rc_verbs_ep_(put|am)_short)$")


def calls(path):
    """Calls of each function, summed over its callers (the cfn=/calls= lines)."""
    names, counts, cfn = {}, collections.Counter(), None
    for line in open(path, errors="replace"):
        m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line)
        if m:
            kind, fid, name = m.groups()
            if name:
                names[fid] = name.strip()
            if kind == "cfn":
                cfn = names.get(fid)
            continue
        m = re.match(r"calls=(\d+)", line)
        if m and cfn:
            counts[cfn] += int(m.group(1))
    return counts


def inclusive(path):
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", path],
                         capture_output=True, text=True).stdout
    totals = collections.Counter()
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+\S*:(\S+)", line)
        if m and OPS.search(m.group(2)):
            totals[m.group(2)] = max(totals[m.group(2)], int(m.group(1).replace(",", "")))
    return totals


for path in sys.argv[1:]:
    c, inc = calls(path), inclusive(path)
    for fn, total in sorted(inc.items()):
        if c[fn]:
            print("%-28s %-28s %10d instr %6d calls %7.1f instr/call" %
                  (path, fn, total, c[fn], total / c[fn]))
