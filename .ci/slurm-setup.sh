#!/usr/bin/env bash
# A single-node SLURM on this machine, for tests/training/test_slurm.py (docs/guides/execution.md#slurm-test).
#   .ci/slurm-setup.sh        install slurm-wlm and munge (Debian/Ubuntu, apt) if missing, write /etc/slurm/slurm.conf
#                             for this host (its CPUs and memory as `slurmd -C` reports them), start munged, slurmctld
#                             and slurmd unless they answer already, and wait until the node takes jobs
#   .ci/slurm-setup.sh stop   stop the daemons this script started (by the pid files it named)
# Idempotent: run it again and it changes nothing that works. Needs root; without root or apt it says so and exits 1.
# No accounting (no slurmdbd, no sacct): nht submit reads job states from squeue.
set -euo pipefail

CONF=/etc/slurm/slurm.conf
PIDS=/run/nht-slurm
mkdir -p "$PIDS" 2>/dev/null || true

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...: poll COMMAND every second until it succeeds
    local limit=$1 what=$2
    shift 2
    for ((i = 0; i < limit; i++)); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 1
    done
    echo "slurm-setup: $what did not happen within ${limit} s" >&2
    return 1
}

stop_daemon() {  # stop_daemon NAME: SIGTERM the pid in its pid file, then wait for it to end
    local file=$PIDS/$1.pid
    [[ -f $file ]] || return 0
    local pid
    pid=$(cat "$file")
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid"
        wait_for 60 "$1 ending" bash -c "! kill -0 $pid"
    fi
    rm -f "$file"
}

if [[ ${1:-} == stop ]]; then
    stop_daemon slurmd
    stop_daemon slurmctld
    stop_daemon munged
    echo "slurm-setup: stopped"
    exit 0
fi

if [[ $(id -u) != 0 ]]; then
    echo "slurm-setup: needs root (it installs packages and starts daemons)" >&2
    exit 1
fi

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    if ! command -v apt-get >/dev/null; then
        echo "slurm-setup: slurm-wlm and munge are not installed and there is no apt-get to install them" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q && apt-get install -y -q slurm-wlm munge
fi

# munge: a key, its folders, the daemon
if [[ ! -s /etc/munge/munge.key ]]; then
    mungekey --create --keyfile=/etc/munge/munge.key 2>/dev/null \
        || dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
fi
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown -R munge:munge /etc/munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null || true
chmod 0400 /etc/munge/munge.key
if ! munge -n </dev/null >/dev/null 2>&1; then
    runuser -u munge -- munged --pid-file=/run/munge/munged.pid 2>/dev/null || munged --force
    wait_for 30 "munged answering" bash -c "munge -n </dev/null | unmunge"
    cp /run/munge/munged.pid "$PIDS/munged.pid" 2>/dev/null || pgrep -o -x munged >"$PIDS/munged.pid"
fi

# slurm.conf for this host: its name, CPUs and memory from `slurmd -C`
host=$(hostname -s)
node=$(slurmd -C | head -1 | sed "s/^NodeName=[^ ]*/NodeName=$host NodeAddr=127.0.0.1/")
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
wanted=$(cat <<EOF
# written by nht_jax's .ci/slurm-setup.sh: one node, this host
ClusterName=nht
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$PIDS/slurmctld.pid
SlurmdPidFile=$PIDS/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MinJobAge=60
$node State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
)
if [[ ! -f $CONF ]] || [[ $(cat "$CONF") != "$wanted" ]]; then
    printf '%s\n' "$wanted" >"$CONF"
    changed=1
fi

if ! scontrol ping 2>/dev/null | grep -q "is UP"; then
    slurmctld
    wait_for 60 "slurmctld answering" bash -c "scontrol ping | grep -q 'is UP'"
elif [[ ${changed:-0} == 1 ]]; then
    scontrol reconfigure
fi
if ! [[ -f $PIDS/slurmd.pid ]] || ! kill -0 "$(cat "$PIDS/slurmd.pid")" 2>/dev/null; then
    slurmd
fi
wait_for 120 "node $host taking jobs" bash -c "sinfo -h -N -o '%t' | grep -Eq '^(idle|mix|alloc)'"
echo "slurm-setup: SLURM is up on $host: $(sinfo -h -N -o '%N %c CPUs %m MiB %t')"
