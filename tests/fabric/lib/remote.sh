# Sourced by tests/fabric/lib/fabric and tests/ucx_tools/common.sh.
# remote_cmdline CMD [ARG...]: prints the shell line that runs CMD on another host, reached by
# ssh, in this directory and with this side's UCX_*, UCP_CPP_*, GDR_*, OMPI_*, MPIR_CVAR_*,
# LD_PRELOAD and LD_LIBRARY_PATH (ssh passes no environment; every word is quoted for the remote
# shell).  Usage: ssh -n HOST "$(remote_cmdline CMD ARG...)"
remote_cmdline() {
  local line v
  line="cd $(printf '%q' "$PWD") && exec env"
  while IFS= read -r v; do line+=" $(printf '%q' "$v=${!v}")"; done \
    < <(compgen -e | grep -E '^(UCX_|UCP_CPP_|GDR_|OMPI_|MPIR_CVAR_|LD_PRELOAD$|LD_LIBRARY_PATH$)')
  for v in "$@"; do line+=" $(printf '%q' "$v")"; done
  printf '%s\n' "$line"
}
