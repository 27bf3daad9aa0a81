#!/usr/bin/env bash
# On the GPU machine: restores the libraries tools/make-bundle.sh gzip'd to fit a device call (a no-op otherwise).
# usage: tools/unpack-bundle.sh [BUNDLE_DIR]   (default: .bundle at the repository root)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bundle=${1:-$root/.bundle}
for f in "$bundle"/lib/*.gz; do
  [ -e "$f" ] || continue
  gunzip -f "$f"
done
