# shellcheck shell=bash
# tests/stacks/leg.sh: sourced (not run) by a stack suite's prepare and run, so that the suite
# can run on a leg of tests/legs (another distribution's UCX and Open MPI, in a root of its own)
# as well as on the host's stack.
#
#   STACKS_LEG=debian13 tests/stacks/<suite>/run ...   (tests/stacks/check --leg debian13 sets it)
#
#   stacks_enter_leg SCRIPT ARGS...   with STACKS_LEG set and not yet inside that leg's root:
#       re-runs SCRIPT ARGS inside it (tests/legs/$STACKS_LEG/enter, environment kept, on the
#       host or in the Soft-RoCE VM) and does not return; otherwise returns.  LEG_BIND (extra
#       host directories to see inside, colon-separated) passes through: a suite's source cache.
#   ompi_major                        the Open MPI here (inside the leg: the leg's), major version
#                                     (4 for Debian 12's 4.1.4, 5 for Debian 13's 5.0.7)
#   ompi_version                      the same, in full (mpirun --version)
# Without STACKS_LEG nothing changes: the suite runs on the host's Open MPI.
stacks_enter_leg() {
  local script=$1; shift
  [[ -z ${STACKS_LEG:-} || ${_STACKS_IN_LEG:-} == "$STACKS_LEG" ]] && return 0
  local top enter
  top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  enter=$top/tests/legs/$STACKS_LEG/enter
  [[ -x $enter ]] || { echo "stacks: STACKS_LEG=$STACKS_LEG: no $enter" >&2; exit 2; }
  _STACKS_IN_LEG=$STACKS_LEG exec "$enter" "$script" "$@"
}

ompi_version() { mpirun --version 2>/dev/null | sed -nE 's/^mpirun \(Open MPI\) ([0-9.]+).*/\1/p' | head -1; }
ompi_major() { local v; v=$(ompi_version); echo "${v%%.*}"; }
