#!/bin/bash
# tests/ucx_tools/wr_api.sh: UCX_GDR_WR_API takes effect. Each interface says at debug level
# how it posts ("posting with ibv_wr_*" or "... ibv_post_send"): 'no' gives ibv_post_send,
# 'yes' and 'try' the builders on a provider that has them (rxe does: the test fails on one that
# should and does not), and a value UCX's parser cannot read is refused with the variable's name.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
select_target
[[ $TL == gdr_rc ]] || skip "UCX_GDR_WR_API is gdr_rc's setting (GDR_TEST_TL=$TL)"

posting() {  # posting VALUE: the way the iface on $DEV says it posts with UCX_GDR_WR_API=VALUE
  local out
  out=$(UCX_GDR_WR_API=$1 UCX_LOG_LEVEL=debug timeout 60 ucx_info -d -t gdr_rc 2>&1) || true
  # the line goes on after the posting method (", strong fence"): take the word alone
  grep -oE "gdr_rc: iface .* on ${DEV} .*posting with [^ ,]+" <<<"$out" | grep -oE '[^ ]+$' | head -1
}
no=$(posting no); try=$(posting try); yes=$(posting yes)
log "UCX_GDR_WR_API=no: ${no:-?}, try: ${try:-?}, yes: ${yes:-?}"
[[ $no == ibv_post_send ]] || die "UCX_GDR_WR_API=no posts with '${no:-nothing}', not ibv_post_send"
case ${DEV%%:*} in
  rxe*|mlx5*) [[ $try == 'ibv_wr_*' ]] ||
                die "${DEV%%:*}'s provider has ibv_wr_* builders, but UCX_GDR_WR_API=try posts with '${try:-nothing}'"
              [[ $yes == 'ibv_wr_*' ]] ||
                die "UCX_GDR_WR_API=yes posts with '${yes:-nothing}' on ${DEV%%:*}" ;;
  *)          [[ -n $try ]] || die "UCX_GDR_WR_API=try opened no gdr_rc iface" ;;
esac
out=$(UCX_GDR_WR_API=sometimes timeout 60 ucx_info -d -t gdr_rc 2>&1) || true
grep -q "Invalid value for WR_API: 'sometimes'" <<<"$out" ||
  die "UCX_GDR_WR_API=sometimes was not refused by name: $(head -c 400 <<<"$out")"
log "OK"
