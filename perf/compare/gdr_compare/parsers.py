"""The five output parsers: ucx_perftest, perftest, gdr_perftest and coll_bench (two views of it:
ucp_cpp::coll and MPI).  Each answers (value, why-not): a number only when the tool printed a
finite one, otherwise the reason, never a guess."""

import re

from .units import BW, LAT, MR, MiB, TIME

NUMBER = r"-?(?:[\d.]+(?:e[-+]?\d+)?|inf|nan)"
PERFTEST_CLOCK_FAILURE = "Correlation coefficient"


def finite(text):
    value = float(text)
    return value if value == value and abs(value) != float("inf") else None


def number_or_none(text):
    return finite(text) if re.fullmatch(NUMBER, text) else None


def parse_ucx_perftest(out, metric):
    """`ucx_perftest -v -f` prints a CSV header and one final line:
    iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr
    (latency in us, one-way for ping-pong tests; bandwidth in MiB/s; message rate in messages
    per second).  Latency: the median; bandwidth and message rate: the overall average.
    Returns (value, why-not)."""
    for line in reversed(out.splitlines()):
        fields = line.strip().split(",")
        if len(fields) == 8 and all(re.fullmatch(NUMBER, x) for x in fields):
            value = finite(fields[{LAT: 1, MR: 7}.get(metric, 5)])
            if value is None:
                return None, f"non-finite result: {line.strip()}"
            return value, None
    return None, "no result line in ucx_perftest output"


def parse_perftest(out, metric, size):
    """perftest result lines start with the message size.  ib_*_lat: #bytes #iterations t_min
    t_max t_typical ... (t_typical = median one-way us); ib_*_bw: #bytes #iterations BW_peak
    BW_average MsgRate (MB/sec = MiB/s, perftest's format_factor 0x100000).  Returns (value,
    why-not)."""
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[0] == str(size) and re.fullmatch(r"\d+", fields[1]):
            value = number_or_none(fields[4] if metric == LAT else fields[3])
            if value is not None:
                return value, None
            if PERFTEST_CLOCK_FAILURE in out:
                # perftest converts cycles with a CPU clock it calibrates itself; on an overloaded
                # host (or a TCG guest) the calibration can fail and every time reads "inf"
                return None, ("perftest could not calibrate the CPU clock (r^2 < 0.9): "
                              "host overloaded?")
            return None, f"non-finite result: {line.strip()}"
    return None, "no result line in perftest output"


def parse_gdr_perftest(out):
    """gdr_perftest's tables: per test a "# gdr_perftest VERSION: TEST, ..." line, a column header
    starting with "size", one row per size.  Returns {test: {size: {column: text}}}."""
    tables, test, columns = {}, None, None
    for line in out.splitlines():
        m = re.match(r"#\s*gdr_perftest \S+: (\w+),", line)
        if m:
            test, columns = m.group(1), None
            continue
        fields = line.split()
        if not fields or line.startswith("#") or test is None:
            continue
        if fields[0] == "size":
            columns = fields
        elif columns and len(fields) == len(columns) and fields[0].isdigit():
            tables.setdefault(test, {})[int(fields[0])] = dict(zip(columns, fields))
    return tables


def gdr_perftest_value(tables, test, size, metric):
    """The number of one row that compares with ucx_perftest / MPI: latency = p50_us (median half
    round trip), bandwidth in MiB/s (2^20 B/s, as ucx_perftest), time per call = time_us.
    Returns (value, why-not)."""
    row = tables.get(test, {}).get(size)
    if row is None:
        return None, f"no {test} result line for size {size} in gdr_perftest output"
    if row.get("check") != "ok":
        return None, f"gdr_perftest {test} size {size}: verification {row.get('check')}"
    # bandwidth: from avg_us = elapsed / iters, the same elapsed as bw_GBps = bytes / elapsed
    # (and bytes = iters x size once the check is ok), but printed with more significant digits
    column = {LAT: "p50_us", BW: "avg_us", TIME: "time_us"}[metric]
    text = row.get(column, "-")
    value = number_or_none(text)
    if value is None or (metric == BW and value <= 0):
        return None, f"gdr_perftest {test} size {size}: {column} is {text}"
    return (size / (value * 1e-6) / MiB if metric == BW else value), None


def parse_coll_bench(out):
    """coll_bench: after "# coll_bench OP, P ranks, ..." a header "bytes ours_us mpi_us ours_busbw
    mpi_busbw ratio check" and one row per size (time per call in us, max over ranks).  Returns
    (op, ranks, {bytes: {column: text}})."""
    op = ranks = None
    rows, columns = {}, None
    for line in out.splitlines():
        m = re.match(r"#\s*coll_bench (\w+), (\d+) ranks", line)
        if m:
            op, ranks = m.group(1), int(m.group(2))
            continue
        fields = line.split()
        if not fields or line.startswith("#"):
            continue
        if fields[0] == "bytes":
            columns = fields
        elif columns and len(fields) == len(columns) and fields[0].isdigit():
            rows[int(fields[0])] = dict(zip(columns, fields))
    return op, ranks, rows


def coll_bench_value(rows, block, column):
    """ours_us or mpi_us of one size.  Returns (value, why-not)."""
    row = rows.get(block)
    if row is None:
        return None, f"no result line for {block} bytes in coll_bench output"
    if column == "ours_us" and row.get("check") != "ok":  # coll_bench checks ours, not MPI's
        return None, f"coll_bench: result check {row.get('check')} at {block} bytes"
    text = row.get(column, "")
    value = number_or_none(text)
    return (value, None) if value is not None else (None, f"coll_bench {column} is {text!r}")
