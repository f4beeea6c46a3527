#!/bin/bash
# Open MPI's osc ucx, request-based one-sided calls from Python: mpi_rma_nb.sh NP
# mpirun -np NP of tests/stacks/ompi-osc/rma_nb.py (mpi4py: MPI_Rput, MPI_Rget, MPI_Raccumulate,
# MPI_Rget_accumulate in passive-target epochs, every value read back checked) with pml ucx and
# osc ucx over the transport under test.  Success = mpirun exits 0 within the timeout, every rank
# printed "checks ok", no UCX error, and UCP's ep_cfg lines (UCX_LOG_LEVEL=info) put the rma lanes
# on $TL/$DEV.  Exit 77 = skipped (no device, no mpirun, no mpi4py for /usr/bin/python3).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/common.sh"
(( $# == 1 )) || { echo "usage: $0 NP" >&2; exit 2; }
np=$1
command -v mpirun >/dev/null || skip "mpirun not found (apt-get install openmpi-bin)"
/usr/bin/python3 -c 'import mpi4py' 2>/dev/null || skip "no mpi4py for /usr/bin/python3 (apt-get install python3-mpi4py)"
select_target

work=$(mktemp -d "${TMPDIR:-/tmp}/mpi_rma_nb.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0
ompi_ucx_run "$np" "$work/out.log" /usr/bin/python3 "$here/../stacks/ompi-osc/rma_nb.py" || failed=1
# the ranks' lines and UCX's log may share a line: count the words, not the lines
ok=$(grep -Eo "rma_nb: rank [0-9]+: [0-9]+ checks ok" "$work/out.log" | wc -l)
(( ok == np )) || { log "$ok of $np ranks reported their checks ok"; failed=1; }
no_ucx_errors "$work/out.log" || failed=1
check_lanes "$work/out.log" rma || failed=1
(( failed == 0 )) || die "rma_nb np=$np"
log "PASS: rma_nb np=$np over ${GDR_TEST_UCX_TLS:-$TL,ud_verbs:aux}"
