#!/usr/bin/env bash
# Installs the Debian packages posenc needs to build, test and benchmark, if any is missing.
# Non-interactive; safe to run again. Usage: scripts/install-deps.sh
set -euo pipefail

packages=(cmake ninja-build gcc g++ pkg-config libsleef-dev libbenchmark-dev libgtest-dev)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "posenc: installing missing packages: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
