#!/usr/bin/env bash
# Installs what openrnn needs to build and test on Debian/Ubuntu (run as root or with sudo available).
# The CUDA toolkit is not installed here: the CUDA backend is built when nvcc is found (e.g. /usr/local/cuda).
set -euo pipefail
pkgs=(cmake g++ make ninja-build pkg-config libopenblas-dev libdnnl-dev libgtest-dev zlib1g-dev
      libcurl4-openssl-dev python3)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  echo "installing: ${missing[*]}"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
