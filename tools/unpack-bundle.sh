#!/usr/bin/env bash
# On the GPU machine: restores the libraries tools/make-bundle.sh compressed (xz or gzip) to fit a device call, in
# lib/ and in baseline/ (make-bundle.sh --baseline); a no-op where there are none.
# usage: tools/unpack-bundle.sh [BUNDLE_DIR]   (default: .bundle at the repository root)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bundle=${1:-$root/.bundle}
for f in "$bundle"/lib/*.gz "$bundle"/baseline/*.gz; do
  [ -e "$f" ] || continue
  gunzip -f "$f"
done
for f in "$bundle"/lib/*.xz "$bundle"/baseline/*.xz; do
  [ -e "$f" ] || continue
  xz -df "$f"
done
