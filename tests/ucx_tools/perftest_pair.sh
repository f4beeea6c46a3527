#!/bin/bash
# One ucx_perftest case as a server/client pair on this host, over the transport under test.
#
#   perftest_pair.sh uct|ucp TEST [ucx_perftest options...] [--lanes FEATURE,...]
#
# uct: runs with -x $TL -d $DEV.  ucp: runs with UCX_TLS=$GDR_TEST_UCX_TLS, UCX_NET_DEVICES=$DEV,
# UCX_LOG_LEVEL=info, and with --lanes checks from UCP's ep_cfg lines that those features' lanes
# are $TL/$DEV.  Success = both processes exit 0 within their timeout, the client printed its
# final result line, and no UCX ERROR/FATAL was logged.  Exit 77 = skipped (no device / no tl /
# capability not advertised).  Env: see common.sh; GDR_TEST_TIMEOUT (default 120 s per process),
# GDR_UCX_PERFTEST (default ucx_perftest; not UCX_*: UCX >= 1.16 warns about UCX_ variables it does not know), GDR_TEST_PORT (default 13400),
# GDR_TEST_PEER (a host reached by `ssh`, e.g. node1 of tests/fabric/run: the server runs there,
# in the same directory, with this side's UCX_*, GDR_* and LD_PRELOAD, and the client connects to
# it over the wire; default: both on this host).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/common.sh"

(( $# >= 2 )) || { echo "usage: $0 uct|ucp TEST [options] [--lanes f1,f2]" >&2; exit 2; }
api=$1 test=$2; shift 2
lanes=""
args=()
while (( $# )); do
  case $1 in
    --lanes) lanes=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done

select_target
perftest=${GDR_UCX_PERFTEST:-ucx_perftest}
limit=${GDR_TEST_TIMEOUT:-120}
work=$(mktemp -d "${TMPDIR:-/tmp}/perftest.XXXXXX")
server_pid=""
cleanup() {
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

common=()
case $api in
  uct)
    common=(-x "$TL" -d "$DEV")
    # atomics: skip (not fail) when the transport does not advertise the operation
    case $test in
      add_lat|add_mr) cap=atomic_add ;;
      fadd) cap=atomic_fadd ;;
      swap) cap=atomic_swap ;;
      cswap) cap=atomic_cswap ;;
      *) cap="" ;;
    esac
    if [[ -n "$cap" ]] && ! tl_block | grep "$cap:" >/dev/null; then
      skip "$TL does not advertise $cap (ucx_info -d), so ucx_perftest -t $test cannot run"
    fi
    ;;
  ucp)
    export UCX_TLS=${GDR_TEST_UCX_TLS:-$TL,ud_verbs:aux}
    export UCX_NET_DEVICES=$DEV
    export UCX_LOG_LEVEL=info  # for UCP's lane lines (check_lanes)
    # UCX_PROTO_ENABLE stays the release's default: n up to 1.15 (1.13 prints the lane lines only
    # with those v1 protocols), y from 1.16 on (1.22 has no v1 RMA at all: ucp_put_nbx refuses it)
    ;;
  *) die "api must be uct or ucp" ;;
esac

mapfile -t standalone < <(perftest_standalone_opts "$perftest")
common+=("${standalone[@]}")

peer=${GDR_TEST_PEER:-}
server=(timeout -k 5 "$limit" "$perftest" "${common[@]}")
if [[ -n $peer ]]; then
  port=${GDR_TEST_PORT:-13400}
  log "$api $test on $TL/$DEV: ucx_perftest ${common[*]} -t $test ${args[*]} (server on $peer, port $port)"
  on_peer "$peer" "${server[@]}" -p "$port" >"$work/server.log" 2>&1 &
  server_pid=$!
  wait_listening_on "$peer" "$port" 90 "$server_pid" \
    || { cat "$work/server.log" >&2; die "server on $peer did not listen on $port"; }
  server_addr=$peer
else
  port=$(free_port "${GDR_TEST_PORT:-13400}")
  log "$api $test on $TL/$DEV: ucx_perftest ${common[*]} -t $test ${args[*]} (port $port)"
  "${server[@]}" -p "$port" >"$work/server.log" 2>&1 &
  server_pid=$!
  wait_listening "$port" 60 "$server_pid" || { cat "$work/server.log" >&2; die "server did not listen on $port"; }
  server_addr=127.0.0.1
fi

timeout -k 5 "$limit" "$perftest" "$server_addr" -p "$port" "${common[@]}" -t "$test" "${args[@]}" >"$work/client.log" 2>&1
client_rc=$?
wait "$server_pid"; server_rc=$?
server_pid=""

echo "----- client"; cat "$work/client.log"
echo "----- server"; cat "$work/server.log"
echo "-----"
failed=0
(( client_rc == 0 )) || { log "client exit status $client_rc$( ((client_rc == 124)) && echo ' (timeout)')"; failed=1; }
(( server_rc == 0 )) || { log "server exit status $server_rc$( ((server_rc == 124)) && echo ' (timeout)')"; failed=1; }
# the final result row: iterations then at least 7 columns (latency, bandwidth, rate), the last
# (the overall message rate) a number.  UCX prints -nan in the "average" columns when the last
# report interval was empty (seen over rc_verbs across two hosts); the "overall" ones hold.
grep -Eq '^\s*(Final:)?\s*[0-9]+(\s+[0-9]+(\.[0-9]+)?|\s+inf|\s+-?nan){6,}\s+[0-9]+(\.[0-9]+)?\s*$' \
  "$work/client.log" || { log "no result line in the client output"; failed=1; }
if grep -E 'UCX +(ERROR|FATAL)' "$work/client.log" "$work/server.log" >&2; then
  log "UCX reported errors"; failed=1
fi
if [[ -n "$lanes" ]]; then
  cat "$work/client.log" "$work/server.log" >"$work/both.log"
  check_lanes "$work/both.log" ${lanes//,/ } || failed=1
fi
(( failed == 0 )) || die "$api $test"
log "PASS: $api $test"
