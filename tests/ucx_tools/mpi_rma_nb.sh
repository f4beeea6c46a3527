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

tls=${GDR_TEST_UCX_TLS:-$TL,ud_verbs:aux}
work=$(mktemp -d "${TMPDIR:-/tmp}/mpi_rma_nb.XXXXXX")
trap 'rm -rf "$work"' EXIT
# the flags of mpi_ring.sh (Debian's openmpi-mca-params.conf disables pml ucx)
cmd=(mpirun -np "$np" --oversubscribe --allow-run-as-root
     --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca osc ucx --mca btl self
     -x UCX_TLS="$tls" -x UCX_NET_DEVICES="$DEV" -x UCX_UD_VERBS_ETH_DGID_CHECK=n -x UCX_LOG_LEVEL=info)
[[ -n "${LD_PRELOAD:-}" ]] && cmd+=(-x LD_PRELOAD="$LD_PRELOAD")
cmd+=(/usr/bin/python3 "$here/../stacks/ompi-osc/rma_nb.py")
log "${cmd[*]}"
env -u LD_PRELOAD timeout -k 10 "${GDR_TEST_TIMEOUT:-300}" "${cmd[@]}" >"$work/out.log" 2>&1
rc=$?
cat "$work/out.log"
failed=0
(( rc == 0 )) || { log "mpirun exit status $rc$( ((rc == 124)) && echo ' (timeout)')"; failed=1; }
# the ranks' lines and UCX's log may share a line: count the words, not the lines
ok=$(grep -Eo "rma_nb: rank [0-9]+: [0-9]+ checks ok" "$work/out.log" | wc -l)
(( ok == np )) || { log "$ok of $np ranks reported their checks ok"; failed=1; }
if grep -E 'UCX +(ERROR|FATAL)' "$work/out.log" >&2; then log "UCX reported errors"; failed=1; fi
check_lanes "$work/out.log" rma || failed=1
(( failed == 0 )) || die "rma_nb np=$np"
log "PASS: rma_nb np=$np over $tls"
