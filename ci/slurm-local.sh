#!/usr/bin/env bash
# A single-node SLURM cluster on this machine, for CI (tests/test_slurm.py).
# Debian 12 packages (slurm 22.05, munge, MariaDB 10.11); needs root (or sudo); no
# systemd and no cgroups needed.
#
#   ci/slurm-local.sh [start]   install what is missing, configure, start; idempotent
#   ci/slurm-local.sh stop      stop the daemons (by their PID files) and MariaDB
#   ci/slurm-local.sh status    what is running, and sinfo
#
# What it sets up, and why:
# - accounting (MariaDB + slurmdbd): the Snakemake SLURM plugin polls job states with
#   `sacct`; without accounting that polling fails silently and Snakemake waits forever
#   after the jobs have finished. It also makes `slurm_account` work: cluster `localci`,
#   account `ci`, and the current user associated with it.
# - EnforcePartLimits=ALL: a job asking for more CPUs than the node has is rejected by
#   sbatch ("More processors requested than permitted") instead of pending forever.
# - JobAcctGatherParams=OverMemoryKill: a job whose processes use more memory than it
#   asked for (--mem) is killed, as on a cluster with cgroups, so that Snakemake's
#   retry with more memory (profiles/slurm: mem_mb scales with `attempt`) can be tested.
# - the node line is copied from `slurmd -C`, with 90 % of the detected memory (more
#   than slurmd detects drains the node).
#
# Environment:
#   SLURM_LOCAL_ACCOUNTING=1 (default)  MariaDB + slurmdbd; 0: no database (then run
#                                       snakemake with --slurm-status-command squeue
#                                       and without slurm_account)
#   SLURM_LOCAL_PARTITION=debug         partition name
#   SLURM_LOCAL_ACCOUNT=ci              account for root and for $SUDO_USER
#   SLURM_LOCAL_SKIP_APT_UPDATE=1       do not run apt-get update before installing
#
# Logs: /var/log/slurm/{slurmctld,slurmd,slurmdbd}.log.
set -euo pipefail

if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then exec sudo -E "$0" "$@"; fi
    echo "[slurm-local] must run as root (or with sudo)" >&2
    exit 1
fi

ACCOUNTING="${SLURM_LOCAL_ACCOUNTING:-1}"
PARTITION="${SLURM_LOCAL_PARTITION:-debug}"
ACCOUNT="${SLURM_LOCAL_ACCOUNT:-ci}"
CLUSTER=localci
DBPASS=slurmdbpass
RUN=/run/slurm
LOG=/var/log/slurm

log() { echo "[slurm-local] $*" >&2; }

# alive, and the daemon its file is named after: a stale file's pid can be reused by
# another process (mariadbd took slurmdbd's once, and slurmdbd was never started)
pid_alive() {
    local p
    p=$(cat "$1" 2>/dev/null) && [ -n "$p" ] && kill -0 "$p" 2>/dev/null &&
        [ "$(cat /proc/"$p"/comm 2>/dev/null)" = "$(basename "$1" .pid)" ]
}

stop_pidfile() {
    local f=$1 name=$2 i
    if pid_alive "$f"; then
        log "stopping $name (pid $(cat "$f"))"
        kill "$(cat "$f")" || true
        for i in $(seq 1 50); do pid_alive "$f" || break; sleep 0.2; done
    fi
    rm -f "$f"
}

wait_for() { # wait_for <seconds> <cmd...>
    local t=$1 i
    shift
    for i in $(seq 1 $((t * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
    return 1
}

do_stop() {
    stop_pidfile $RUN/slurmd.pid slurmd
    stop_pidfile $RUN/slurmctld.pid slurmctld
    stop_pidfile $RUN/slurmdbd.pid slurmdbd
    if [ -x /etc/init.d/mariadb ] && [ -S /run/mysqld/mysqld.sock ]; then
        log "stopping mariadb"
        service mariadb stop >/dev/null 2>&1 || true
    fi
    stop_pidfile /run/munge/munged.pid munged
}

do_status() {
    local f
    for f in /run/munge/munged.pid $RUN/slurmdbd.pid $RUN/slurmctld.pid $RUN/slurmd.pid; do
        if pid_alive "$f"; then
            echo "running: $(basename "$f" .pid) pid $(cat "$f")"
        else
            echo "stopped: $(basename "$f" .pid)"
        fi
    done
    sinfo 2>/dev/null || true
}

install_pkgs() {
    local pkgs=(munge slurmctld slurmd slurm-client) missing=() p
    if [ "$ACCOUNTING" = 1 ]; then pkgs+=(slurmdbd mariadb-server); fi
    for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        log "installing ${missing[*]}"
        [ -n "${SLURM_LOCAL_SKIP_APT_UPDATE:-}" ] || apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "${missing[@]}" >/dev/null
    fi
}

start_munge() {
    [ -s /etc/munge/munge.key ] ||
        { log "creating munge key"; /usr/sbin/mungekey -c -k /etc/munge/munge.key; }
    chown munge:munge /etc/munge/munge.key
    chmod 400 /etc/munge/munge.key
    mkdir -p /run/munge
    chown munge:munge /run/munge
    chmod 755 /run/munge
    if ! pid_alive /run/munge/munged.pid; then
        log "starting munged"
        rm -f /run/munge/munged.pid
        # munged refuses to run as root without --force
        runuser -u munge -- /usr/sbin/munged
    fi
    wait_for 10 sh -c 'munge -n | unmunge' || { log "munge does not work"; exit 1; }
}

write_slurm_conf() {
    local host node_hw realmem acct_lines
    host=$(hostname -s)
    # e.g. "NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105"
    node_hw=$(slurmd -C | head -1)
    realmem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$node_hw")
    realmem=$((realmem * 9 / 10)) # more than slurmd detects drains the node
    node_hw=$(sed -e 's/^NodeName=[^ ]* //' -e 's/ *RealMemory=[0-9]*//' \
        -e 's/ *Boards=[0-9]*//' <<<"$node_hw")
    if [ "$ACCOUNTING" = 1 ]; then
        acct_lines="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=6819"
    else
        acct_lines="AccountingStorageType=accounting_storage/none"
    fi
    mkdir -p /etc/slurm
    cat >/etc/slurm/slurm.conf <<EOF
# generated by ci/slurm-local.sh
ClusterName=$CLUSTER
SlurmctldHost=localhost
SlurmUser=slurm
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
# reject impossible requests at submit time instead of leaving them PENDING forever
EnforcePartLimits=ALL
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
$acct_lines
# sample job memory every 2 s and kill a job that exceeds its --mem (no cgroups here)
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=2
JobAcctGatherParams=OverMemoryKill
JobCompType=jobcomp/none
# finished jobs stay visible to squeue for 5 min (the plugin's squeue mode needs that)
MinJobAge=300
InactiveLimit=0
KillWait=5
Waittime=0
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host NodeAddr=127.0.0.1 $node_hw RealMemory=$realmem State=UNKNOWN
PartitionName=$PARTITION Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

start_db() {
    if ! mysqladmin ping >/dev/null 2>&1; then
        log "starting mariadb"
        service mariadb start >/dev/null
        wait_for 30 mysqladmin ping || { log "mariadb did not start"; exit 1; }
    fi
    mysql -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
              CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DBPASS';
              GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;"
    cat >/etc/slurm/slurmdbd.conf <<EOF
# generated by ci/slurm-local.sh
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
SlurmUser=slurm
LogFile=$LOG/slurmdbd.log
PidFile=$RUN/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageLoc=slurm_acct_db
StorageUser=slurm
StoragePass=$DBPASS
EOF
    # slurmdbd refuses a config that others can read
    chown slurm:slurm /etc/slurm/slurmdbd.conf
    chmod 600 /etc/slurm/slurmdbd.conf
    if ! pid_alive $RUN/slurmdbd.pid; then
        log "starting slurmdbd"
        slurmdbd
    fi
    wait_for 60 sacctmgr -n show cluster ||
        { log "slurmdbd does not answer; see $LOG/slurmdbd.log"; exit 1; }
    # the cluster must be in the database before slurmctld starts
    [ -n "$(sacctmgr -n -P show cluster $CLUSTER format=cluster)" ] ||
        sacctmgr -i add cluster $CLUSTER >/dev/null
}

add_account() {
    local user
    [ -n "$(sacctmgr -n -P show account "$ACCOUNT" format=account)" ] ||
        sacctmgr -i add account "$ACCOUNT" Cluster=$CLUSTER Description=ci Organization=ci >/dev/null
    # root, and the user who ran the script through sudo (who then submits the jobs)
    for user in root ${SUDO_USER:-}; do
        sacctmgr -n -P -s list user "$user" format=account | grep -qx "$ACCOUNT" ||
            sacctmgr -i add user "$user" Account="$ACCOUNT" DefaultAccount="$ACCOUNT" >/dev/null
    done
}

node_idle() { sinfo -h -n "$(hostname -s)" -o %t | grep -Eqx 'idle|mix|alloc'; }

do_start() {
    local t0=$SECONDS old_md5="" host
    install_pkgs
    mkdir -p /var/spool/slurmctld /var/spool/slurmd $LOG $RUN
    chown slurm:slurm /var/spool/slurmctld $LOG $RUN
    start_munge
    [ -f /etc/slurm/slurm.conf ] && old_md5=$(md5sum </etc/slurm/slurm.conf)
    write_slurm_conf
    if [ -n "$old_md5" ] && [ "$old_md5" != "$(md5sum </etc/slurm/slurm.conf)" ]; then
        log "slurm.conf changed: restarting slurmctld and slurmd"
        stop_pidfile $RUN/slurmd.pid slurmd
        stop_pidfile $RUN/slurmctld.pid slurmctld
    fi
    if [ "$ACCOUNTING" = 1 ]; then start_db; fi
    if ! pid_alive $RUN/slurmctld.pid; then
        log "starting slurmctld"
        slurmctld
    fi
    wait_for 30 scontrol ping ||
        { log "slurmctld does not answer; see $LOG/slurmctld.log"; exit 1; }
    if ! pid_alive $RUN/slurmd.pid; then
        log "starting slurmd"
        slurmd
    fi
    host=$(hostname -s)
    if ! wait_for 30 node_idle; then
        scontrol update NodeName="$host" State=RESUME >/dev/null 2>&1 || true
        wait_for 15 node_idle ||
            { log "node not usable: $(sinfo -h -N -o '%N %t %E')"; exit 1; }
    fi
    if [ "$ACCOUNTING" = 1 ]; then add_account; fi
    sinfo
    log "ready after $((SECONDS - t0)) s"
}

case "${1:-start}" in
start) do_start ;;
stop) do_stop ;;
status) do_status ;;
*)
    echo "usage: $0 [start|stop|status]" >&2
    exit 2
    ;;
esac
