#!/bin/bash
# OpenMPI's pml ucx over the transport under test: mpi_ring.sh NP /path/to/mpi_ring
# Success = mpirun exits 0 within the timeout, every rank printed "rank R of NP ok", and UCP's
# ep_cfg lines (UCX_LOG_LEVEL=info) put the tag lanes on $TL/$DEV.  Exit 77 = skipped.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/common.sh"
(( $# == 2 )) || { echo "usage: $0 NP MPI_RING_BINARY" >&2; exit 2; }
np=$1 prog=$2
command -v mpirun >/dev/null || skip "mpirun not found (apt-get install openmpi-bin)"
select_target

work=$(mktemp -d "${TMPDIR:-/tmp}/mpi_ring.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0
GDR_TEST_TIMEOUT=${GDR_TEST_TIMEOUT:-180} ompi_ucx_run "$np" "$work/out.log" "$prog" || failed=1
ok=$(grep -Ec "^rank [0-9]+ of $np ok$" "$work/out.log")
(( ok == np )) || { log "$ok of $np ranks reported ok"; failed=1; }
no_ucx_errors "$work/out.log" || failed=1
check_lanes "$work/out.log" tag || failed=1
(( failed == 0 )) || die "mpi_ring np=$np"
log "PASS: mpi_ring np=$np over ${GDR_TEST_UCX_TLS:-$TL,ud_verbs:aux}"
