#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the cluster tests and for
# trying `podsim sweep --slurm` on a laptop: munged, slurmctld and slurmd run
# from a private state folder (munge key, slurm.conf with this host as
# controller and only node, spool/state/logs/pids) and are stopped by pid.
#
#   scripts/slurm-local.sh start    # then: export SLURM_CONF=<dir>/slurm.conf
#   scripts/slurm-local.sh status
#   scripts/slurm-local.sh stop
#
# State folder: $PODSIM_SLURM_DIR, default build/slurm-local (under the repo).
# Ports: $PODSIM_SLURM_PORT (slurmctld) and the next one (slurmd), default
# 6817. Only loopback: the node's address is 127.0.0.1. No cgroups, no
# accounting database (finished tasks stay visible to squeue for an hour).
# Needs root (SlurmUser=root) and the Debian packages slurm-wlm and munge.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${PODSIM_SLURM_DIR:-$ROOT/build/slurm-local}"
PORT="${PODSIM_SLURM_PORT:-6817}"
CONF="$DIR/slurm.conf"
SOCKET="$DIR/munge/munge.socket"
NODE="$(hostname -s)"

# pid of a daemon from its pid file, when that process still runs.
running_pid() {
  local file="$1"
  [ -f "$file" ] || return 1
  local pid
  pid="$(cat "$file" 2>/dev/null || true)"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# Sends TERM to the daemon of `file` and waits up to 20 s (then KILL).
stop_daemon() {
  local name="$1" file="$2" pid
  pid="$(running_pid "$file")" || { rm -f "$file"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$file"; echo "stopped $name (pid $pid)"; return 0; }
    sleep 0.2
  done
  kill -KILL "$pid" 2>/dev/null || true
  sleep 0.2
  rm -f "$file"
  echo "killed $name (pid $pid): it did not stop within 20 s"
}

# Waits up to `seconds` for a pid file naming a live process.
wait_pid_file() {
  local file="$1" seconds="$2"
  for _ in $(seq 1 $((seconds * 5))); do
    running_pid "$file" >/dev/null && return 0
    sleep 0.2
  done
  return 1
}

write_conf() {
  local cpus mem
  cpus="$(nproc)"
  # RealMemory in MB: total memory less 512 MB for the system, at least 256.
  mem="$(awk '/^MemTotal:/ {m = int($2 / 1024) - 512; if (m < 256) m = 256; print m}' /proc/meminfo)"
  cat >"$CONF" <<EOF
# One-node cluster written by scripts/slurm-local.sh; every path is under $DIR.
ClusterName=podsim-local
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MinJobAge=3600
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
  command -v slurmctld >/dev/null && command -v munged >/dev/null || {
    echo "slurm-local: slurmctld or munged not found; install slurm-wlm and munge" >&2
    exit 2
  }
  if running_pid "$DIR/slurmctld.pid" >/dev/null || running_pid "$DIR/slurmd.pid" >/dev/null; then
    echo "slurm-local: already running in $DIR (scripts/slurm-local.sh stop first)" >&2
    status
    return 0
  fi
  mkdir -p "$DIR"/{munge,state,spool,log}
  chmod 700 "$DIR/munge"
  if [ ! -f "$DIR/munge/munge.key" ]; then
    dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$DIR/munge/munge.key"
  fi
  write_conf
  if ! running_pid "$DIR/munged.pid" >/dev/null; then
    munged --force --socket="$SOCKET" --key-file="$DIR/munge/munge.key" \
      --pid-file="$DIR/munged.pid" --log-file="$DIR/log/munged.log" \
      --seed-file="$DIR/munge/munged.seed"
    wait_pid_file "$DIR/munged.pid" 10 || { echo "slurm-local: munged did not start; see $DIR/log/munged.log" >&2; stop; exit 1; }
  fi
  # -c: a fresh controller state (no jobs of an earlier run); -i: ignore the
  # node's lost jobs.
  slurmctld -c -f "$CONF"
  wait_pid_file "$DIR/slurmctld.pid" 20 || { echo "slurm-local: slurmctld did not start; see $DIR/log/slurmctld.log" >&2; stop; exit 1; }
  slurmd -f "$CONF"
  wait_pid_file "$DIR/slurmd.pid" 20 || { echo "slurm-local: slurmd did not start; see $DIR/log/slurmd.log" >&2; stop; exit 1; }
  # The node registers with the controller within a few seconds.
  for _ in $(seq 1 150); do
    state="$(SLURM_CONF="$CONF" sinfo -h -n "$NODE" -o %t 2>/dev/null || true)"
    case "$state" in idle* | mix* | alloc*) break ;; esac
    sleep 0.2
  done
  case "$state" in
    idle* | mix* | alloc*) ;;
    *) echo "slurm-local: node $NODE is '$state', not idle; see $DIR/log/" >&2; stop; exit 1 ;;
  esac
  echo "slurm-local: running in $DIR (node $NODE, $(nproc) CPUs, partition 'local')"
  echo "export SLURM_CONF=$CONF"
}

stop() {
  # Jobs first: a task's slurmstepd outlives slurmd, so cancel every job of
  # this cluster and wait (up to 20 s) until none runs.
  if running_pid "$DIR/slurmctld.pid" >/dev/null; then
    SLURM_CONF="$CONF" scancel --user="$(id -un)" 2>/dev/null || true
    for _ in $(seq 1 100); do
      [ -z "$(SLURM_CONF="$CONF" squeue -h -t running,completing,configuring 2>/dev/null)" ] && break
      sleep 0.2
    done
  fi
  # Then slurmd, the controller, munged.
  stop_daemon slurmd "$DIR/slurmd.pid"
  stop_daemon slurmctld "$DIR/slurmctld.pid"
  stop_daemon munged "$DIR/munged.pid"
}

status() {
  local any=1 name pid
  for name in munged slurmctld slurmd; do
    if pid="$(running_pid "$DIR/$name.pid")"; then
      echo "$name: running (pid $pid)"
      any=0
    else
      echo "$name: not running"
    fi
  done
  if [ "$any" -eq 0 ] && [ -f "$CONF" ]; then
    echo "SLURM_CONF=$CONF"
    SLURM_CONF="$CONF" sinfo 2>&1 || true
  fi
  return "$any"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *)
    echo "usage: $0 start|stop|status   (state folder: \$PODSIM_SLURM_DIR, default build/slurm-local)" >&2
    exit 2
    ;;
esac
