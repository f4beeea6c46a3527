# Shared by the ucx_tools drivers (sourced, not run). Selects the transport under test the same
# way as the gtest suites and decides whether the test can run at all.  tests/legs/check and
# tests/legs/package-smoke source it for the UCX tool settings (perftest_standalone_opts,
# vfs_off_if_known); they define their own die/say after it.
#
#   GDR_TEST_TL     transport (default gdr_rc; rc_verbs validates the suite itself)
#   GDR_TEST_DEV    device (default: port 1 of the first verbs device)
#   GDR_PLUGIN      libuct_gdr.so to LD_PRELOAD into every UCX process ("" = none)
#   GDR_TEST_UCX_TLS  UCX_TLS for UCP runs (default "$GDR_TEST_TL,ud_verbs:aux": UCP needs an
#                   auxiliary transport for wireup of a connect-to-ep transport)
# Exit code 77 = skipped (CTest SKIP_RETURN_CODE).

readonly SKIP=77
log() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
skip() { log "SKIP: $*"; exit "$SKIP"; }
die() { log "FAIL: $*"; exit 1; }

first_verbs_device() {
  local d
  for d in /sys/class/infiniband/*; do
    [[ -e "$d" ]] && { printf '%s:1\n' "${d##*/}"; return 0; }
  done
  return 1
}

# Sets TL, DEV, exports LD_PRELOAD; skips when there is no device or the tl is missing.
select_target() {
  TL=${GDR_TEST_TL:-gdr_rc}
  DEV=${GDR_TEST_DEV:-$(first_verbs_device || true)}
  [[ -n "$DEV" ]] || skip "no verbs device (/sys/class/infiniband is empty); rdma tests need one, e.g. the Soft-RoCE VM"
  local plugin=${GDR_PLUGIN-${GDR_DEFAULT_PLUGIN:-}}
  if [[ -z "${GDR_PLUGIN+set}" && "$TL" != gdr* ]]; then
    plugin=""  # the build's plugin is only loaded by default for its own transports
  fi
  if [[ -n "$plugin" ]]; then
    [[ -r "$plugin" ]] || die "GDR_PLUGIN=$plugin is not readable"
    # a sanitized plugin (./configure --sanitize) brings its runtimes, which must come first
    export LD_PRELOAD="$("$(dirname "${BASH_SOURCE[0]}")/../sanitize/preload" "$plugin")${LD_PRELOAD:+:$LD_PRELOAD}"
  fi
  # -t: only this transport's interfaces are opened (a full -d takes ~10 s in the emulated VM)
  UCX_INFO_D=$(timeout 60 ucx_info -d -t "$TL" 2>&1) || die "ucx_info -d -t $TL failed: $UCX_INFO_D"
  # a device but not the transport: a plugin that stopped registering it, or a wrong GDR_TEST_TL --
  # a failure, since a run that tests nothing must not pass
  if ! tl_block >/dev/null; then
    die "transport '$TL' on device '$DEV' is not offered by UCX (GDR_TEST_TL/GDR_TEST_DEV; plugin: ${plugin:-none}); available: $(timeout 60 ucx_info -d 2>&1 | grep -Eo 'Transport: \S+' | sort -u | awk '{print $2}' | tr '\n' ' ')"
  fi
  export UCX_UD_VERBS_ETH_DGID_CHECK=${UCX_UD_VERBS_ETH_DGID_CHECK:-n}  # rxe: see docs/rxe-vm.md#pitfalls
}

# The `ucx_info -d` lines of $TL on $DEV (from "Transport:" to the next "Transport:"/md).
tl_block() {
  awk -v tl="$TL" -v dev="$DEV" '
    /#[ ]+Transport:/ { in_tl = ($3 == tl); in_dev = 0; next }
    /#[ ]+(Memory domain|Connection manager):/ { in_tl = 0; in_dev = 0; next }
    in_tl && /#[ ]+Device:/ { in_dev = ($3 == dev); next }
    in_tl && in_dev { print; found = 1 }
    END { exit !found }' <<<"$UCX_INFO_D"
}

# perftest_standalone_opts PERFTEST: the options that keep a ucx_perftest a plain server/client
# pair, one a line.  One built with MPI runs as an MPI job unless given -P 0 (Debian 13's does so
# whenever stdin is not a terminal; its help mentions MPI but not -P, which it accepts).
#   mapfile -t opts < <(perftest_standalone_opts ucx_perftest)
perftest_standalone_opts() {
  local help
  help=$("$1" -h 2>&1 || true)   # (it exits non-zero after printing its usage)
  if grep -q 'MPI' <<<"$help"; then
    printf '%s\n' -P 0
  fi
}

# vfs_off_if_known [UCX_INFO_C]: exports UCX_VFS_ENABLE=n when this UCX knows that setting (one that
# does not would warn about a UCX_ variable it does not know).  A UCX built with FUSE serves a
# virtual file system; where it cannot (the Soft-RoCE VM) every process that loads libucs says so
# on stdout, UCX's default log file -- with LD_PRELOAD, every process.  UCX_INFO_C: `ucx_info -c`
# output already at hand (else ucx_info runs here).
vfs_off_if_known() {
  local config=${1-$(ucx_info -c 2>/dev/null || true)}
  if grep -q '^UCX_VFS_ENABLE=' <<<"$config"; then
    export UCX_VFS_ENABLE=n
  fi
}

free_port() {
  # first port >= $1 nobody listens on
  local p=$1
  # (no LD_PRELOAD: a preloaded plugin brings libucs, which may print to stdout in any process)
  while env -u LD_PRELOAD ss -Hltn "sport = :$p" 2>/dev/null | grep -q .; do p=$((p + 1)); done
  echo "$p"
}

wait_listening() {  # port deadline_s pid
  local port=$1 deadline=$((SECONDS + $2)) pid=$3
  until env -u LD_PRELOAD ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; do
    kill -0 "$pid" 2>/dev/null || return 1
    (( SECONDS < deadline )) || return 1
    sleep 0.2
  done
}

# on_peer HOST CMD [ARG...]: CMD on another host reached by `ssh` (a tests/fabric node), in this
# directory, with this side's UCX_*, GDR_*, LD_PRELOAD and LD_LIBRARY_PATH; CMD's status (255:
# ssh failed).  ssh's stdin is /dev/null, so a CMD in the background does not take ours.
source "$(dirname "${BASH_SOURCE[0]}")/../fabric/lib/remote.sh"
on_peer() { local host=$1; shift; ssh -n "$host" "$(remote_cmdline "$@")"; }

# wait_listening_on HOST PORT DEADLINE_S PID: until something listens on PORT on HOST (PID: the
# local ssh that started it, which must stay alive)
wait_listening_on() {
  local host=$1 port=$2 deadline=$((SECONDS + $3)) pid=$4
  until ssh -n "$host" "ss -Hltn 'sport = :$port'" 2>/dev/null | grep -q .; do
    kill -0 "$pid" 2>/dev/null || return 1
    (( SECONDS < deadline )) || return 1
    sleep 0.5
  done
}

# check_lanes LOGFILE FEATURE...: UCP's own lines describing an ep configuration's lanes
# (ucp_worker.c, UCX_LOG_LEVEL=info, printed when an ep configuration is created) must show every
# FEATURE on $TL/$DEV only, and at least one line must show it.  UCX up to 1.15 writes
# "ep_cfg[N]: tag(tl/dev) rma(...) am(...)", later ones "<name> intra-node cfg#N tag(tl/dev) ...".
check_lanes() {
  local logf=$1; shift
  local lines feature bad
  lines=$(grep -Eo '(ep_cfg\[[0-9]+\]:|(intra|inter)-node cfg#[0-9]+) .*' "$logf" || true)
  [[ -n "$lines" ]] || { log "no ep_cfg lines in $logf (UCX_LOG_LEVEL=info missing?)"; return 1; }
  for feature in "$@"; do
    local with
    with=$(grep -Eo "(^|[ ;])$feature\([^)]*\)" <<<"$lines" || true)
    if [[ -z "$with" ]]; then
      log "no ep_cfg line has a '$feature' lane:"; printf '  %s\n' "$lines" >&2; return 1
    fi
    bad=$(grep -Eo "$feature\([^)]*\)" <<<"$with" | grep -Ev "^$feature\(($TL/$DEV ?)+\)$" || true)
    if [[ -n "$bad" ]]; then
      log "'$feature' lanes not (only) on $TL/$DEV: $(tr '\n' ' ' <<<"$bad")"; return 1
    fi
    log "lanes ok: $(grep -Eo "$feature\([^)]*\)" <<<"$with" | sort -u | tr '\n' ' ')"
  done
}

# ompi_ucx_run NP LOG PROGRAM [ARG...]: mpirun -np NP of PROGRAM with Open MPI's pml ucx and osc
# ucx over the transport under test (after select_target), UCP's ep_cfg lines logged
# (UCX_LOG_LEVEL=info), bounded by GDR_TEST_TIMEOUT (default 300 s); its output in LOG and on
# stdout.  Returns mpirun's status, logged when not 0.  Debian's openmpi-mca-params.conf disables
# pml ucx and the pml filters transports/devices to mlx*: the flags override all three; -x passes
# the variables to the ranks, and mpirun itself does not preload the plugin (it never
# initialises UCX).
ompi_ucx_run() {
  local np=$1 logf=$2; shift 2
  local tls=${GDR_TEST_UCX_TLS:-$TL,ud_verbs:aux} rc
  local cmd=(mpirun -np "$np" --oversubscribe --allow-run-as-root
             --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca osc ucx --mca btl self
             -x UCX_TLS="$tls" -x UCX_NET_DEVICES="$DEV" -x UCX_UD_VERBS_ETH_DGID_CHECK=n
             -x UCX_LOG_LEVEL=info)
  [[ -n "${LD_PRELOAD:-}" ]] && cmd+=(-x LD_PRELOAD="$LD_PRELOAD")
  cmd+=("$@")
  log "${cmd[*]}"
  env -u LD_PRELOAD timeout -k 10 "${GDR_TEST_TIMEOUT:-300}" "${cmd[@]}" >"$logf" 2>&1
  rc=$?
  cat "$logf"
  (( rc == 0 )) || log "mpirun exit status $rc$( ((rc == 124)) && echo ' (timeout)')"
  return $rc
}

# no_ucx_errors LOG: true when LOG has no UCX ERROR/FATAL line (they are printed when found)
no_ucx_errors() {
  ! grep -E 'UCX +(ERROR|FATAL)' "$1" >&2 || { log "UCX reported errors"; return 1; }
}
