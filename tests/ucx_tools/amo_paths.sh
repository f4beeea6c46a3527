#!/bin/bash
# tests/ucx_tools/amo_paths.sh AMO_PATH_BIN OUT_DIR [REPEATS]
#
# Which path UCP (UCX_PROTO_ENABLE default) gives 32- and 64-bit atomics over gdr_rc and over
# UCX's rc_verbs, and what they cost there (docs/atomics.md quotes its output):
#   1. ucp_amo_path (tests/ucx_tools/ucp_amo_path.c, built at AMO_PATH_BIN) with the context
#      asking UCP_FEATURE_AMO32, AMO64 and both, per transport: the ep's lanes, UCP's ep_cfg line
#      (UCX_LOG_LEVEL=info: amo(tl/dev) is a device atomic lane, amo_am(tl/dev) emulation over
#      active messages), whether a fetch-add completes while the target does not progress, and
#      ns per fetch-add (both workers in one thread);
#   2. ucx_perftest -t ucp_fadd / ucp_add with -s 4 (it asks AMO32) and -s 8 (AMO64), server and
#      client processes, REPEATS (default 3) rounds, the two transports interleaved in each round.
# Writes OUT_DIR/paths.tsv (tl, features, width, path, ns_per_op, ep_cfg amo lane),
# OUT_DIR/perftest.tsv (round, tl, test, size, typical latency us, msg rate) and the logs.
# Needs a verbs device (inside tests/rxe-vm/run) and the plugin: GDR_PLUGIN (default
# build-amo/lib/libuct_gdr.so) is preloaded into gdr_rc's processes only.
# Environment: GDR_TEST_DEV (default the first verbs device, port 1), PERF_ITERS (ucx_perftest -n,
# default 2000), AMO_ITERS (ucp_amo_path, default 2000).
# Exit status: 0 when every run completed with right values, 1 otherwise, 2 on usage errors.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
source "$here/common.sh"
(($# >= 2)) || { echo "usage: $0 AMO_PATH_BIN OUT_DIR [REPEATS]" >&2; exit 2; }
bin=$(realpath "$1") out=$2 repeats=${3:-3}
plugin=${GDR_PLUGIN:-$top/build-amo/lib/libuct_gdr.so}
DEV=${GDR_TEST_DEV:-$(first_verbs_device)} || die "no verbs device"
mkdir -p "$out"
export UCX_NET_DEVICES=$DEV UCX_UD_VERBS_ETH_DGID_CHECK=n
vfs_off_if_known
failed=0

# with_tl TL CMD...: CMD over TL (UCX_TLS=TL,ud_verbs:aux; the plugin for gdr_rc only)
with_tl() {
  local tl=$1; shift
  if [[ $tl == gdr_rc ]]; then
    env UCX_TLS=gdr_rc,ud_verbs:aux LD_PRELOAD="$plugin" "$@"
  else
    env -u LD_PRELOAD UCX_TLS="$tl,ud_verbs:aux" "$@"
  fi
}

printf 'tl\tfeatures\twidth\tpath\tns_per_op\tep_cfg_amo\n' >"$out/paths.tsv"
for tl in gdr_rc rc_verbs; do
  for features in amo32 amo64 both; do
    log="$out/path.$tl.$features.log"
    if ! with_tl "$tl" env UCX_LOG_LEVEL=info timeout -k 5 300 "$bin" "$features" \
        "${AMO_ITERS:-2000}" >"$log" 2>&1; then
      log "ucp_amo_path $features over $tl failed:"; tail -5 "$log" >&2; failed=1
    fi
    lane=$(grep -Eo 'amo(_am)?\([^)]*\)' "$log" | sort -u | tr '\n' ' ')
    grep -E '^path ' "$log" | while read -r _ width path _ ns; do
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$tl" "$features" "$width" "$path" "$ns" "$lane"
    done >>"$out/paths.tsv"
  done
done
column -t -s $'\t' "$out/paths.tsv"

mapfile -t standalone < <(perftest_standalone_opts ucx_perftest)
printf 'round\ttl\ttest\tsize\ttypical_lat_us\tmsg_rate\n' >"$out/perftest.tsv"
for ((r = 1; r <= repeats; ++r)); do
  for test in ucp_fadd ucp_add; do
    for size in 4 8; do
      for tl in gdr_rc rc_verbs; do
        log="$out/perftest.$r.$tl.$test.$size.log"
        port=$(free_port 13990)
        with_tl "$tl" timeout -k 5 180 ucx_perftest "${standalone[@]}" -p "$port" \
          >"$log.server" 2>&1 &
        server=$!
        wait_listening "$port" 60 "$server" || { log "server did not listen"; failed=1; }
        if ! with_tl "$tl" timeout -k 5 180 ucx_perftest "${standalone[@]}" 127.0.0.1 \
            -p "$port" -t "$test" -s "$size" -n "${PERF_ITERS:-2000}" -w 200 >"$log" 2>&1; then
          log "ucx_perftest -t $test -s $size over $tl failed"; tail -3 "$log" >&2; failed=1
        fi
        wait "$server" || true
        # the final row: iterations, typical/avg/overall latency, bandwidth x2, rate x2
        row=$(grep -E '^\s*(Final:)?\s*[0-9]+(\s+[0-9.]+|\s+inf){7,}\s*$' "$log" | tail -1 || true)
        read -r -a f <<<"${row#*Final:}"
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$tl" "$test" "$size" "${f[1]:-n/a}" \
          "${f[7]:-n/a}" >>"$out/perftest.tsv"
      done
    done
  done
done
column -t -s $'\t' "$out/perftest.tsv"
exit "$failed"
