#!/usr/bin/env bash
# ctest's setup and cleanup around the cluster tests (label `cluster`):
# `start` brings up the one-node cluster of scripts/slurm-local.sh in
# $PODSIM_SLURM_DIR; `stop` stops it and fails when any process of it
# (munged, slurmctld, slurmd) is left. Without root there is no cluster:
# start says so and the tests skip themselves.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
: "${PODSIM_SLURM_DIR:?set PODSIM_SLURM_DIR}"
case "${1:-}" in
  start)
    mkdir -p "$PODSIM_SLURM_DIR"
    rm -f "$PODSIM_SLURM_DIR/slurm.conf"  # the tests skip without it
    if [ "$(id -u)" -ne 0 ]; then
      echo "cluster tests skip: scripts/slurm-local.sh needs root (SlurmUser=root)"
      exit 0
    fi
    # A cluster left by an interrupted run goes first.
    "$ROOT/scripts/slurm-local.sh" stop >/dev/null 2>&1 || true
    exec "$ROOT/scripts/slurm-local.sh" start
    ;;
  stop)
    "$ROOT/scripts/slurm-local.sh" stop
    left="$(pgrep -a -f -- "$PODSIM_SLURM_DIR/" || true)"
    if [ -n "$left" ]; then
      echo "left running after stop:"
      echo "$left"
      exit 1
    fi
    ;;
  *)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
