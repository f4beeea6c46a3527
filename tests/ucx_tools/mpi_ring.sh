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

tls=${GDR_TEST_UCX_TLS:-$TL,ud_verbs:aux}
work=$(mktemp -d "${TMPDIR:-/tmp}/mpi_ring.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Debian's openmpi-mca-params.conf disables pml ucx and the pml filters transports/devices to
# mlx*: override all three.  -x passes the variables to the ranks (not to mpirun itself).
cmd=(mpirun -np "$np" --oversubscribe --allow-run-as-root
     --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca osc ucx --mca btl self
     -x UCX_TLS="$tls" -x UCX_NET_DEVICES="$DEV" -x UCX_UD_VERBS_ETH_DGID_CHECK=n -x UCX_LOG_LEVEL=info)
[[ -n "${LD_PRELOAD:-}" ]] && cmd+=(-x LD_PRELOAD="$LD_PRELOAD")
cmd+=("$prog")
# mpirun itself must not preload the plugin (it never initialises UCX, and it is not needed there)
log "${cmd[*]}"
env -u LD_PRELOAD timeout -k 10 "${GDR_TEST_TIMEOUT:-180}" "${cmd[@]}" >"$work/out.log" 2>&1
rc=$?
cat "$work/out.log"
failed=0
(( rc == 0 )) || { log "mpirun exit status $rc$( ((rc == 124)) && echo ' (timeout)')"; failed=1; }
ok=$(grep -Ec "^rank [0-9]+ of $np ok$" "$work/out.log")
(( ok == np )) || { log "$ok of $np ranks reported ok"; failed=1; }
if grep -E 'UCX +(ERROR|FATAL)' "$work/out.log" >&2; then log "UCX reported errors"; failed=1; fi
check_lanes "$work/out.log" tag || failed=1
(( failed == 0 )) || die "mpi_ring np=$np"
log "PASS: mpi_ring np=$np over $tls"
