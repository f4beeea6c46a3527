#!/bin/bash
# A ucx_perftest UCP client whose server is SIGKILLed mid-stream must end soon, the way it ends over
# UCX's own rc_verbs, never hang.
#
#   server_killed.sh TEST [ucx_perftest options...]     e.g. server_killed.sh tag_bw -s 65536
#
# For the reference transport (GDR_TEST_REF_TL, default rc_verbs), then $TL (common.sh's choice, a
# gdr transport: skipped for another one, there is nothing to compare): a server, a client
# streaming TEST with a practically endless -n, the server killed (SIGKILL) once the client has
# printed a progress line, and the seconds from the kill to the client's end. ucx_perftest's
# endpoints have UCP's default error mode (no peer error handling), so UCP hands the failure to
# nobody, and UCX's fatal log ends the process: SIGABRT, status 134. $TL's client must end within
# GDR_TEST_KILL_BOUND seconds (default 30) with the reference's status (134 if the reference did
# not end). The reference's own end is printed, not required: it ends only when one of its sends
# meets the dying server's receive buffers released before its QP (a NAK at once); on a busy
# Soft-RoCE host that race is sometimes lost, and then, at RETRY_COUNT 7, it waits for ever
# (docs/reliability.md). gdr_rc's slowest way out is its stall check on Soft-RoCE, which retries
# for ever at 7: (7 + 1) x UCX_GDR_TIMEOUT (1 s, rounded to 1.07 s) = 8.6 s nominal; the bound
# leaves room for a slower guest, and is still far from a hang. Exit 77: skipped.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/common.sh"

(( $# >= 1 )) || { echo "usage: $0 TEST [ucx_perftest options...]" >&2; exit 2; }
test=$1; shift
args=("$@")

select_target
ref_tl=${GDR_TEST_REF_TL:-rc_verbs}
perftest=${GDR_UCX_PERFTEST:-ucx_perftest}
bound=${GDR_TEST_KILL_BOUND:-30}
mapfile -t standalone < <(perftest_standalone_opts "$perftest")
work=$(mktemp -d "${TMPDIR:-/tmp}/server_killed.XXXXXX")
server_pid="" client_pid=""
cleanup() {
  [[ -n $server_pid ]] && kill -KILL "$server_pid" 2>/dev/null
  [[ -n $client_pid ]] && kill -KILL "$client_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

now() { date +%s.%N; }
elapsed_below() { awk -v s="$1" -v n="$(now)" -v b="$2" 'BEGIN { exit !(n - s < b) }'; }

# run_case TL: sets case_status (the client's exit status, or "hang") and case_secs (seconds
# from the kill to the client's end)
run_case() {
  local tl=$1 port out=$work/$1 deadline start end
  local env=(env UCX_TLS="$tl,ud_verbs:aux" UCX_NET_DEVICES="$DEV")
  # the plugin only where its transport runs: the reference is UCX's alone
  [[ $tl == gdr* ]] || env+=(LD_PRELOAD="$preload_without_plugin")
  port=$(free_port "${GDR_TEST_PORT:-13400}")
  "${env[@]}" "$perftest" "${standalone[@]}" -p "$port" >"$out.server" 2>&1 &
  server_pid=$!
  wait_listening "$port" 60 "$server_pid" ||
    { cat "$out.server" >&2; die "$tl: server did not listen on $port"; }
  "${env[@]}" "$perftest" 127.0.0.1 -p "$port" "${standalone[@]}" -t "$test" "${args[@]}" \
    -n 1000000000 >"$out.client" 2>&1 &
  client_pid=$!
  # traffic first: ucx_perftest prints a progress line a second while it streams
  deadline=$((SECONDS + 60))
  until grep -q '^\[thread 0\]' "$out.client" 2>/dev/null; do
    if ! kill -0 "$client_pid" 2>/dev/null || ((SECONDS >= deadline)); then
      cat "$out.client" "$out.server" >&2
      die "$tl: the client streamed nothing (no progress line) before the kill"
    fi
    sleep 0.2
  done
  start=$(now)
  kill -KILL "$server_pid"
  wait "$server_pid" 2>/dev/null
  server_pid=""
  # (env execs the tool: the pids are ucx_perftest's own)
  while kill -0 "$client_pid" 2>/dev/null && elapsed_below "$start" $((bound + 10)); do
    sleep 0.05
  done
  end=$(now)
  if kill -0 "$client_pid" 2>/dev/null; then
    kill -KILL "$client_pid"
    wait "$client_pid" 2>/dev/null
    case_status=hang
  else
    wait "$client_pid"
    case_status=$?
  fi
  client_pid=""
  case_secs=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", e - s }')
  echo "----- $tl client: UCX's last lines" >&2
  grep -E '\] +[a-z_]+\.c:[0-9]+ ' "$out.client" | tail -n 4 >&2
}

# select_target preloads the plugin: the reference runs without it (a sanitizer's runtime stays)
preload_without_plugin=$(tr ':' '\n' <<<"${LD_PRELOAD-}" | grep -v 'libuct_gdr' | paste -sd: -)
[[ $TL == gdr* ]] || skip "compares a gdr transport with $ref_tl (GDR_TEST_TL=$TL)"
if ! ucx_info -d -t "$ref_tl" 2>/dev/null | grep -q "Transport: $ref_tl"; then
  skip "the reference transport $ref_tl is not on this machine"
fi
declare -A status secs
for tl in "$ref_tl" "$TL"; do
  run_case "$tl"
  status[$tl]=$case_status secs[$tl]=$case_secs
  log "$tl: the client's end: status $case_status, $case_secs s after its server was killed"
done
failed=0
expected=${status[$ref_tl]}
case $expected in
  hang) log "$ref_tl (reference) did not end within $((bound + 10)) s (see above)"
        expected=134 ;;
  0) die "$ref_tl (reference): the client exited 0 though its server was killed: no fault made" ;;
esac
case ${status[$TL]} in
  hang) log "$TL: the client still ran $((bound + 10)) s after the kill"; failed=1 ;;
  "$expected") awk -v t="${secs[$TL]}" -v b="$bound" 'BEGIN { exit !(t <= b) }' ||
                 { log "$TL: the client ended after the bound of $bound s"; failed=1; } ;;
  *) log "$TL: the client ended with status ${status[$TL]}, not $expected as over $ref_tl"; failed=1 ;;
esac
((failed == 0)) || die "a killed server's client under $test over $TL"
log "PASS: $TL status ${status[$TL]} after ${secs[$TL]} s (bound $bound s); $ref_tl status ${status[$ref_tl]} after ${secs[$ref_tl]} s"
