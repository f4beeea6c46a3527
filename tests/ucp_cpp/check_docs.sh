#!/bin/bash
# tests/ucp_cpp/check_docs.sh DOXYFILE: builds ucp_cpp's API reference, where a warning (an
# undocumented public declaration or parameter, a broken reference) fails (the Doxyfile sets
# WARN_AS_ERROR = FAIL_ON_WARNINGS).  CI must have doxygen (./configure --install-deps=test
# installs it), so with CI=true a missing doxygen fails; elsewhere the test is skipped (exit 77).
set -euo pipefail
doxyfile=${1:?usage: check_docs.sh DOXYFILE}
if ! command -v doxygen >/dev/null; then
  if [[ ${CI:-} == true ]]; then
    echo "doxygen not found, and CI=true: CI must check the API reference" \
         "(./configure --install-deps=test installs doxygen)" >&2
    exit 1
  fi
  echo "SKIP: doxygen not found (apt-get install doxygen, or ./configure --install-deps=test)"
  exit 77
fi
exec doxygen "$doxyfile"
