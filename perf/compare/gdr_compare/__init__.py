"""perf/compare/run — compare gdr_rc with UCX's rc_verbs and with raw verbs, on one device,
in one run.

Runs two-process server/client pairs on the same RDMA device:
  uct  ucx_perftest UCT tests with -x rc_verbs and -x gdr_rc
  ucp  ucx_perftest UCP tests with UCX_TLS=rc_verbs,ud_verbs:aux and UCX_TLS=gdr_rc,ud_verbs:aux
  raw  perftest ib_write_lat / ib_write_bw / ib_read_bw
  wrapper  gdr_perftest (ucp_cpp) tag_lat / tag_bw / put_bw next to ucx_perftest's tag_lat /
       tag_bw / ucp_put_bw, same UCX_TLS, same sizes and iterations
  coll gdr_perftest's collectives (ucp_cpp::coll) next to Open MPI's MPI_* collectives (timed by
       perf/coll_bench), both under the same mpirun, ranks and UCX_TLS
and writes results.json, results.csv, latency.png, bandwidth.png, wrapper.png, coll.png under the
results directory, plus every peer's output under logs/.  Without an RDMA device it re-runs
itself inside the Soft-RoCE VM (tests/rxe-vm/run); the measurements happen there, the table and
plots are made here.  The device, port and GID index come from gdr-doctor --json.

gdr_rc needs the plugin: GDR_PLUGIN=/path/libuct_gdr.so (LD_PRELOAD'ed into both peers).  A row
that could not be measured says "n/a" and why; no number is ever made up.  Full manual and the
module layout: docs/perf-compare.md.
"""
