#!/usr/bin/env bash
# Installs the Debian packages podsim builds against, only when one is missing.
# A fast no-op when everything is present; needs root (or sudo) otherwise.
# Extra package names given as arguments are added (`make fuzz` passes clang).
set -euo pipefail
PACKAGES=(
  build-essential cmake pkg-config make
  libsystemc-dev libboost-graph-dev libfmt-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev
  slurm-wlm munge  # sweep --slurm's cluster tests (scripts/slurm-local.sh)
  python3-dev pybind11-dev python3-pytest python3-matplotlib
  time  # /usr/bin/time -v: scripts/full_fidelity_check.py's peak RSS
  "$@"
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
