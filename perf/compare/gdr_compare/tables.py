"""The comparison tables, joined from the rows: transports (rc_verbs, gdr_rc, raw verbs), wrapper
(gdr_perftest vs ucx_perftest) and collectives (ours vs MPI), with their ratios.  A ratio is the
run's interleaved one (measure.Results.interleave: median of the per-pair ratios, min-max, noisy)
where it has one, else the plain quotient of the two values (the cost section's exact counts, or
a results.json from before interleaving: pairs None).  A ratio with an n/a side is None: no ratio
is ever made up."""

from .interleave import load_range
from .measure import row_key
from .plan import COLL_GATHERS, RAW_PEER, UCX_TEST_OF
from .units import BUSBW, BW, LAT, TIME


def value_of(rows, **key):
    for r in rows:
        if all(r.get(k, 2 if k == "ranks" else None) == v for k, v in key.items()):
            return r
    return None


def ratio(a, b, ratios=()):
    """Row a over row b: dict(median, min, max, pairs, spread, noisy), or None."""
    if a is None or b is None:
        return None
    of, to = row_key(a), row_key(b)
    for r in ratios:
        if r["of"] == of and r["to"] == to:
            return r if r.get("median") is not None else None
    if a["value"] is None or b["value"] in (None, 0):
        return None
    q = a["value"] / b["value"]
    return dict(median=q, min=q, max=q, pairs=None, spread=None, noisy=False)


def loads_of(*rows):
    """(lowest, highest) 1-minute host load over the pairs of these rows, or None."""
    return load_range([pair for r in rows if r for pair in r.get("loads") or ()])


def comparison_rows(rows, ratios=()):
    """One line per (section, test, size): rc_verbs, gdr_rc, gdr_rc/rc_verbs, for UCT the raw
    verbs equivalent with rc_verbs/raw and gdr_rc/raw, and UCP over tcp where it ran (across a
    wire, --peer) with rc_verbs/tcp and gdr_rc/tcp."""
    table = []
    seen = []
    for r in rows:
        key = (r["section"], r["test"], r["size"], r["metric"])
        if r["section"] not in ("uct", "ucp", "cost") or key in seen:
            continue
        seen.append(key)
        section, test, size, metric = key
        rc = value_of(rows, section=section, test=test, size=size, metric=metric,
                      transport="rc_verbs")
        gdr = value_of(rows, section=section, test=test, size=size, metric=metric,
                       transport="gdr_rc")
        raw_tool = RAW_PEER.get(test) if section == "uct" and metric in (LAT, BW) else None
        raw = value_of(rows, section="raw", test=raw_tool, size=size if metric == BW else 8) \
            if raw_tool else None
        tcp = value_of(rows, section=section, test=test, size=size, metric=metric,
                       transport="tcp")
        table.append(dict(section=section, test=test, size=size, metric=metric, rc_verbs=rc,
                          gdr_rc=gdr, gdr_over_rc=ratio(gdr, rc, ratios), raw_tool=raw_tool,
                          raw=raw, rc_over_raw=ratio(rc, raw, ratios),
                          gdr_over_raw=ratio(gdr, raw, ratios), tcp=tcp,
                          rc_over_tcp=ratio(rc, tcp, ratios), gdr_over_tcp=ratio(gdr, tcp, ratios),
                          load=loads_of(rc, gdr, raw, tcp)))
    return table


def wrapper_rows(rows, ratios=()):
    """One line per (test, size, transport): gdr_perftest, ucx_perftest, and
    wrapper/ucx_perftest."""
    table, seen = [], []
    for r in rows:
        key = (r["test"], r["size"], r["metric"], r["transport"])
        if r["section"] != "wrapper" or key in seen:
            continue
        seen.append(key)
        test, size, metric, transport = key

        def get(tool):
            return value_of(rows, section="wrapper", test=test, size=size, transport=transport,
                            tool=tool)
        ours, ucx = get("gdr_perftest"), get("ucx_perftest")
        table.append(dict(test=test, ucx_test=UCX_TEST_OF.get(test, test), size=size,
                          metric=metric, transport=transport, gdr_perftest=ours,
                          ucx_perftest=ucx, wrapper_over_ucx=ratio(ours, ucx, ratios),
                          load=loads_of(ours, ucx)))
    return table


def coll_rows(rows, ratios=()):
    """One line per (op, ranks, size, transport): time per call and busbw of gdr_perftest (ours)
    and MPI, ours/MPI for both, and coll_bench's own timing of ucp_cpp::coll with its ratio to
    MPI: the same library, in the same job as MPI's numbers (ours is a separate mpirun launch)."""
    table, seen = [], []
    for r in rows:
        key = (r["test"], r.get("ranks", 2), r["size"], r["transport"])
        if r["section"] != "coll" or key in seen:
            continue
        seen.append(key)
        op, ranks, size, transport = key

        def get(tool, metric):
            return value_of(rows, section="coll", test=op, ranks=ranks, size=size,
                            transport=transport, tool=tool, metric=metric)
        ours_t, mpi_t, cb_t = get("gdr_perftest", TIME), get("mpi", TIME), get("coll_bench", TIME)
        ours_b, mpi_b = get("gdr_perftest", BUSBW), get("mpi", BUSBW)
        table.append(dict(op=op, ranks=ranks, size=size,
                          block=size // ranks if op in COLL_GATHERS else size,
                          transport=transport, ours_time=ours_t, mpi_time=mpi_t,
                          time_ratio=ratio(ours_t, mpi_t, ratios), ours_busbw=ours_b,
                          mpi_busbw=mpi_b, busbw_ratio=ratio(ours_b, mpi_b, ratios),
                          coll_bench_time=cb_t, coll_bench_over_mpi=ratio(cb_t, mpi_t, ratios),
                          load=loads_of(ours_t, mpi_t, cb_t)))
    return table
