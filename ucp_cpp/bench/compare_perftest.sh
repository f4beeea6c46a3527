#!/bin/sh
# Compares ucp_cpp's tag ping-pong (ucp_cpp_pingpong_bench) with ucx_perftest -t tag_lat /
# tag_bw on the same transport, interleaved in one run, and prints wrapper/perftest ratios.
#
#   compare_perftest.sh [bench binary]        (default: build dir search below)
#   env: TLS=tcp  SIZES="8 4096 65536 1048576"  ITER=20000  ROUNDS=3  WINDOW=32  PORT=13377
#        PERFTEST=ucx_perftest
#
# Latency is the typical (median) half round trip in us; bandwidth in MB/s (2^20).  Each
# round runs perftest then the wrapper for every size; the table reports per-size medians
# over the rounds.  Shared/oversubscribed machines make absolute numbers meaningless: only
# compare the ratios of one run.
set -eu
bench=${1:-}
if [ -z "$bench" ]; then
  for candidate in build*/ucp_cpp/bench/ucp_cpp_pingpong_bench ../build*/ucp_cpp/bench/ucp_cpp_pingpong_bench; do
    [ -x "$candidate" ] && bench=$candidate && break
  done
fi
[ -n "$bench" ] && [ -x "$bench" ] || { echo "usage: $0 <path to ucp_cpp_pingpong_bench>" >&2; exit 2; }
TLS=${TLS:-tcp}
SIZES=${SIZES:-"8 4096 65536 1048576"}
ITER=${ITER:-20000}
ROUNDS=${ROUNDS:-3}
WINDOW=${WINDOW:-32}
PORT=${PORT:-13377}
PERFTEST=${PERFTEST:-ucx_perftest}
WARMUP=$((ITER / 10))
export UCX_TLS=$TLS
results=$(mktemp)
trap 'rm -f "$results"' EXIT

# perftest <test> <size>: prints "<typical latency us> <bandwidth MB/s>" from the Final: line
perftest() {
  "$PERFTEST" -p "$PORT" >/dev/null 2>&1 &
  server=$!
  out=""
  for attempt in 1 2 3 4 5 6 7 8 9 10; do
    sleep 0.3
    if out=$(timeout 300 "$PERFTEST" 127.0.0.1 -p "$PORT" -t "$1" -s "$2" -n "$ITER" -w "$WARMUP" -O "$WINDOW" 2>/dev/null); then
      break
    fi
  done
  wait "$server" 2>/dev/null || true
  echo "$out" | awk '/^Final:/ {print $3, $6}'
}

round=1
while [ "$round" -le "$ROUNDS" ]; do
  for size in $SIZES; do
    set -- $(perftest tag_lat "$size")
    lat=$1
    set -- $(perftest tag_bw "$size")
    bw=$2
    echo "perftest $size $lat $bw" >>"$results"
    "$bench" --sizes "$size" --iterations "$ITER" --window "$WINDOW" |
      awk -v s="$size" '/^size/ {print "wrapper", s, $4, $8}' >>"$results"
  done
  round=$((round + 1))
done

echo "transport: UCX_TLS=$TLS  iterations: $ITER  rounds: $ROUNDS  window: $WINDOW  ($(ucx_info -v | awk '/Version/ {print $3}'))"
printf '%10s %14s %14s %9s %14s %14s %9s\n' size perftest_us wrapper_us lat_ratio perftest_MBps wrapper_MBps bw_ratio
for size in $SIZES; do
  awk -v s="$size" '
    function median(a, n,   i, j, t) {
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    $2 == s && $1 == "perftest" { pl[++np] = $3; pb[np] = $4 }
    $2 == s && $1 == "wrapper"  { wl[++nw] = $3; wb[nw] = $4 }
    END {
      if (np == 0 || nw == 0) { printf "%10s  missing results\n", s; exit }
      a = median(pl, np); b = median(wl, nw); c = median(pb, np); d = median(wb, nw)
      printf "%10s %14.3f %14.3f %9.3f %14.1f %14.1f %9.3f\n", s, a, b, (a > 0 ? b / a : 0), c, d, (c > 0 ? d / c : 0)
    }' "$results"
done
