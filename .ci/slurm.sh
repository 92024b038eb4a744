#!/usr/bin/env bash
# A one-node Slurm cluster on localhost for CI, so that the submitit Slurm path of checkpoint sweeps
# runs for real: munged + mariadbd + slurmdbd + slurmctld + slurmd, all started directly (no systemd).
#
#   bash .ci/slurm.sh up       # install what is missing, configure, start, wait until the node is idle
#   bash .ci/slurm.sh down     # stop the daemons (configuration, state and database are kept)
#   bash .ci/slurm.sh status   # which daemons run, then sinfo
#   bash .ci/slurm.sh smoke    # sbatch --wrap and a 3-task job array must run to completion
#
# Run as root, from any directory. `up` is idempotent: a second run restarts nothing unless the
# generated configuration changed.
#
# Accounting: submitit learns the state of a job from `sacct`, which needs slurmdbd (and slurmdbd
# needs MySQL/MariaDB). Without it submitit still collects results and Python exceptions (from the
# result pickle a job writes), but a job that dies without writing one (OOM kill, time limit,
# scancel, segfault) leaves `job.result()` waiting forever. So slurmdbd is on by default;
# SLURM_CI_ACCOUNTING=none skips MariaDB/slurmdbd (lighter, sacct then fails).
set -euo pipefail

ACCOUNTING=${SLURM_CI_ACCOUNTING:-slurmdbd}
WAIT_S=${SLURM_CI_WAIT_S:-60}
CONF_DIR=/etc/slurm
LOG_DIR=/var/log/slurm
STATE_DIR=/var/spool/slurmctld
SPOOL_DIR=/var/spool/slurmd
RUN_DIR=/run/slurm
MUNGE_KEY=/etc/munge/munge.key
MUNGE_PID=/run/munge/munged.pid
MYSQL_PID=/run/mysqld/mysqld.pid
# Local-only database account (MariaDB listens on 127.0.0.1 only); not a secret.
DB_NAME=slurm_acct_db
DB_USER=slurm
DB_PASS=slurm-ci-local

step() { printf '[slurm.sh] %s\n' "$*"; }
die() {
    printf '[slurm.sh] ERROR: %s\n' "$*" >&2
    exit 1
}

case $ACCOUNTING in
slurmdbd | none) ;;
*) die "SLURM_CI_ACCOUNTING must be 'slurmdbd' or 'none', not '$ACCOUNTING'" ;;
esac

pid_alive() { # pid_alive PIDFILE
    [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

munge_ok() { munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; }
mysql_ok() { mariadb-admin --connect-timeout=2 ping >/dev/null 2>&1; }
dbd_ok() { timeout 10 sacctmgr -n -P list cluster format=cluster >/dev/null 2>&1; }

dump_logs() {
    local f
    for f in /var/log/munge/munged.log "$LOG_DIR/mariadb.log" "$LOG_DIR/slurmdbd.log" \
        "$LOG_DIR/slurmctld.log" "$LOG_DIR/slurmd.log"; do
        if [[ -f $f ]]; then
            printf '\n===== %s (last 60 lines) =====\n' "$f" >&2
            tail -n 60 "$f" >&2
        fi
    done
}

fail() {
    dump_logs
    die "$@"
}

wait_for() { # wait_for SECONDS COMMAND...: poll every 0.5 s
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.5
    done
}

install_packages() {
    local -a missing=()
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null ||
        missing+=(slurm-wlm)
    command -v munged >/dev/null || missing+=(munge)
    if [[ $ACCOUNTING == slurmdbd ]]; then
        command -v slurmdbd >/dev/null || missing+=(slurmdbd)
        command -v mariadbd >/dev/null || missing+=(mariadb-server)
    fi
    if ((${#missing[@]} == 0)); then
        step "packages: already installed"
        return
    fi
    step "packages: apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

start_munge() {
    install -d -o munge -g munge -m 0700 /etc/munge /var/log/munge /var/lib/munge
    install -d -o munge -g munge -m 0755 /run/munge
    if [[ ! -s $MUNGE_KEY ]]; then
        step "munge: creating $MUNGE_KEY"
        mungekey --create --keyfile="$MUNGE_KEY" 2>/dev/null ||
            dd if=/dev/urandom of="$MUNGE_KEY" bs=1 count=1024 status=none
    fi
    # munged refuses a key that is not owned by its user or that others can read.
    chown munge:munge "$MUNGE_KEY"
    chmod 0400 "$MUNGE_KEY"
    if munge_ok; then
        step "munge: munged already running"
        return
    fi
    step "munge: starting munged"
    rm -f "$MUNGE_PID"
    runuser -u munge -- /usr/sbin/munged
    wait_for 10 munge_ok || fail "munged does not answer (munge -n | unmunge)"
}

start_mariadb() {
    if mysql_ok; then
        step "mariadb: already running"
    else
        step "mariadb: starting mariadbd"
        install -d -o mysql -g mysql -m 0755 /run/mysqld
        touch "$LOG_DIR/mariadb.log"
        chown mysql:mysql "$LOG_DIR/mariadb.log"
        if [[ ! -d /var/lib/mysql/mysql ]]; then
            mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
        fi
        start-stop-daemon --start --background --pidfile "$MYSQL_PID" --exec /usr/sbin/mariadbd -- \
            --user=mysql --pid-file="$MYSQL_PID" --log-error="$LOG_DIR/mariadb.log"
        wait_for 30 mysql_ok || fail "mariadbd does not answer (mariadb-admin ping)"
    fi
    # root connects through the unix socket (unix_socket authentication, Debian's default).
    mariadb -e "CREATE DATABASE IF NOT EXISTS ${DB_NAME};
        CREATE USER IF NOT EXISTS '${DB_USER}'@'localhost' IDENTIFIED BY '${DB_PASS}';
        ALTER USER '${DB_USER}'@'localhost' IDENTIFIED BY '${DB_PASS}';
        GRANT ALL ON ${DB_NAME}.* TO '${DB_USER}'@'localhost';" ||
        fail "could not create the accounting database"
}

host_memory_mb() { # MemTotal, capped by a cgroup (v2 or v1) memory limit when there is one
    local mem limit f
    mem=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
    for f in /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes; do
        if [[ -r $f ]]; then
            limit=$(cat "$f")
            if [[ $limit =~ ^[0-9]+$ ]] && ((limit / 1048576 < mem)); then
                mem=$((limit / 1048576))
            fi
        fi
    done
    echo "$mem"
}

install_if_changed() { # install_if_changed NEW_FILE DEST MODE: prints 1 when DEST changed
    if [[ -f $2 ]] && cmp -s "$1" "$2"; then
        rm -f "$1"
        echo 0
    else
        install -m "$3" "$1" "$2"
        rm -f "$1"
        echo 1
    fi
}

write_config() {
    local host cpus mem_mb real_mem def_mem tmp acct
    host=$(hostname -s)
    cpus=$(nproc)
    mem_mb=$(host_memory_mb)
    # Leave headroom for the OS and the daemons: 5% of the memory, at least 256 MB.
    real_mem=$((mem_mb - (mem_mb / 20 > 256 ? mem_mb / 20 : 256)))
    # A job without --mem gets this much per CPU (instead of the whole node), so jobs share the node.
    def_mem=$((real_mem / cpus < 1024 ? real_mem / cpus : 1024))
    install -d -m 0755 "$CONF_DIR" "$LOG_DIR" "$STATE_DIR" "$SPOOL_DIR" "$RUN_DIR"
    if [[ $ACCOUNTING == slurmdbd ]]; then
        acct="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1"
    else
        acct="AccountingStorageType=accounting_storage/none"
    fi
    tmp=$(mktemp)
    cat >"$tmp" <<EOF
# Written by .ci/slurm.sh: a one-node cluster on localhost for CI (no systemd, no cgroups needed).
ClusterName=ci
SlurmctldHost=${host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ReturnToService=2
SlurmctldPidFile=${RUN_DIR}/slurmctld.pid
SlurmdPidFile=${RUN_DIR}/slurmd.pid
SlurmctldLogFile=${LOG_DIR}/slurmctld.log
SlurmdLogFile=${LOG_DIR}/slurmd.log
StateSaveLocation=${STATE_DIR}
SlurmdSpoolDir=${SPOOL_DIR}
# Containers have no usable cgroups: track job processes through /proc, bind no tasks.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
# Trust the node line below even where hardware detection disagrees (containers, CPU quotas).
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=${def_mem}
${acct}
JobCompType=jobcomp/none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=10
Waittime=0
NodeName=${host} NodeAddr=127.0.0.1 CPUs=${cpus} RealMemory=${real_mem} State=UNKNOWN
PartitionName=debug Nodes=${host} Default=YES MaxTime=INFINITE State=UP
EOF
    SLURM_CONF_CHANGED=$(install_if_changed "$tmp" "$CONF_DIR/slurm.conf" 0644)
    step "config: $CONF_DIR/slurm.conf $( ((SLURM_CONF_CHANGED)) && echo written || echo unchanged)" \
        "(node ${host}, ${cpus} CPUs, ${real_mem} MB, accounting: ${ACCOUNTING})"
    DBD_CONF_CHANGED=0
    if [[ $ACCOUNTING == slurmdbd ]]; then
        tmp=$(mktemp)
        cat >"$tmp" <<EOF
# Written by .ci/slurm.sh: slurmdbd on localhost, backed by the local MariaDB.
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
SlurmUser=root
LogFile=${LOG_DIR}/slurmdbd.log
PidFile=${RUN_DIR}/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=${DB_USER}
StoragePass=${DB_PASS}
StorageLoc=${DB_NAME}
EOF
        # slurmdbd refuses a configuration (it holds a password) that others can read.
        DBD_CONF_CHANGED=$(install_if_changed "$tmp" "$CONF_DIR/slurmdbd.conf" 0600)
        step "config: $CONF_DIR/slurmdbd.conf $( ((DBD_CONF_CHANGED)) && echo written || echo unchanged)"
    fi
}

start_daemon() { # start_daemon NAME: start it unless its pidfile names a live process
    if pid_alive "$RUN_DIR/$1.pid"; then
        step "$1: already running (pid $(cat "$RUN_DIR/$1.pid"))"
    else
        step "$1: starting"
        rm -f "$RUN_DIR/$1.pid"
        "$1" || fail "$1 did not start"
    fi
}

stop_daemon() { # stop_daemon NAME
    local pidfile=$RUN_DIR/$1.pid pid
    if pid_alive "$pidfile"; then
        pid=$(cat "$pidfile")
        step "$1: stopping (pid $pid)"
        kill "$pid"
        wait_for 15 eval "! kill -0 $pid 2>/dev/null" || kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
}

start_slurm() {
    if ((SLURM_CONF_CHANGED || DBD_CONF_CHANGED)); then
        stop_daemon slurmd
        stop_daemon slurmctld
    fi
    if [[ $ACCOUNTING == slurmdbd ]]; then
        ((DBD_CONF_CHANGED)) && stop_daemon slurmdbd
        start_daemon slurmdbd
        wait_for 30 dbd_ok || fail "slurmdbd does not answer (sacctmgr list cluster)"
    elif pid_alive "$RUN_DIR/slurmdbd.pid"; then
        stop_daemon slurmdbd
    fi
    start_daemon slurmctld
    start_daemon slurmd
}

node_state() { sinfo -h -N -n "$(hostname -s)" -o '%T' 2>/dev/null | head -n1 || true; }

wait_idle() {
    local host deadline state=""
    host=$(hostname -s)
    step "waiting (at most ${WAIT_S} s) for node ${host} to be idle"
    deadline=$((SECONDS + WAIT_S))
    while ((SECONDS < deadline)); do
        state=$(node_state)
        case $state in
        idle | mixed | allocated | completing)
            step "ready: node ${host} is ${state}"
            return
            ;;
        down* | drain* | fail*)
            # e.g. a node left down by an earlier crash: its slurmd is back, so resume it.
            scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
            ;;
        esac
        sleep 1
    done
    sinfo -N -l >&2 || true
    fail "node ${host} not idle after ${WAIT_S} s (last state: '${state:-no answer}')"
}

check_sacct() {
    [[ $ACCOUNTING == slurmdbd ]] || return 0
    if wait_for 30 eval 'sacct -n -X -j 1 >/dev/null 2>&1 && sacctmgr -n -P list cluster format=cluster | grep -qx ci'; then
        step "accounting: sacct answers (cluster 'ci' registered in slurmdbd)"
    else
        fail "sacct does not work although slurmdbd runs"
    fi
}

cmd_up() {
    [[ $(id -u) == 0 ]] || die "run as root"
    install_packages
    install -d -m 0755 "$LOG_DIR" "$RUN_DIR"
    start_munge
    write_config
    [[ $ACCOUNTING == slurmdbd ]] && start_mariadb
    start_slurm
    wait_idle
    check_sacct
}

cmd_down() {
    [[ $(id -u) == 0 ]] || die "run as root"
    stop_daemon slurmd
    stop_daemon slurmctld
    stop_daemon slurmdbd
    if command -v mariadb-admin >/dev/null && mysql_ok; then
        step "mariadb: stopping"
        mariadb-admin shutdown || true
    fi
    if pid_alive "$MUNGE_PID"; then
        step "munged: stopping"
        runuser -u munge -- /usr/sbin/munged --stop >/dev/null 2>&1 || kill "$(cat "$MUNGE_PID")"
    fi
    step "down"
}

cmd_status() {
    local name
    for name in slurmdbd slurmctld slurmd; do
        if pid_alive "$RUN_DIR/$name.pid"; then
            step "$name: running (pid $(cat "$RUN_DIR/$name.pid"))"
        else
            step "$name: not running"
        fi
    done
    if command -v mariadb-admin >/dev/null && mysql_ok; then step "mariadb: running"; else step "mariadb: not running"; fi
    if command -v munge >/dev/null && munge_ok; then step "munged: running"; else step "munged: not running"; fi
    command -v sinfo >/dev/null || die "sinfo not installed (run: bash $0 up)"
    sinfo || die "the Slurm controller does not answer (run: bash $0 up)"
}

cmd_smoke() {
    local dir id n state
    # Check sacct when the running configuration (not this shell's environment) has accounting.
    grep -q '^AccountingStorageType=accounting_storage/slurmdbd' "$CONF_DIR/slurm.conf" 2>/dev/null &&
        ACCOUNTING=slurmdbd || ACCOUNTING=none
    dir=$(mktemp -d /tmp/slurm-smoke.XXXXXX)
    chmod 0755 "$dir"
    step "smoke: sbatch --wrap (outputs in $dir)"
    # shellcheck disable=SC2016 # $SLURM_* expand in the job, not here
    id=$(timeout 60 sbatch --parsable --wait --chdir="$dir" -o "$dir/wrap-%j.out" \
        --wrap 'echo "wrap ok job=$SLURM_JOB_ID host=$(hostname -s)"') || fail "sbatch --wrap failed"
    grep -q '^wrap ok' "$dir/wrap-$id.out" || fail "sbatch --wrap: no output in $dir/wrap-$id.out"
    step "smoke: job $id completed: $(cat "$dir/wrap-$id.out")"
    step "smoke: sbatch --array=0-2"
    # shellcheck disable=SC2016
    id=$(timeout 60 sbatch --parsable --wait --array=0-2 --chdir="$dir" -o "$dir/array-%A_%a.out" \
        --wrap 'echo "array ok task=$SLURM_ARRAY_TASK_ID"') || fail "sbatch --array failed"
    n=$(cat "$dir"/array-"$id"_*.out | grep -c '^array ok')
    ((n == 3)) || fail "sbatch --array: $n of 3 tasks wrote their output"
    step "smoke: job array $id completed (3 tasks)"
    if [[ $ACCOUNTING == slurmdbd ]]; then
        # slurmctld hands job records to slurmdbd asynchronously: give it a few seconds.
        array_states() { sacct -n -X -P -j "$id" -o State 2>/dev/null | sort | uniq -c | xargs; }
        # shellcheck disable=SC2016
        wait_for 20 eval '[[ $(array_states) == "3 COMPLETED" ]]' ||
            fail "sacct for job array $id says: '$(array_states)'"
        state=$(array_states)
        step "smoke: sacct sees the array tasks: $state"
    fi
    rm -rf "$dir"
}

case ${1:-} in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
smoke) cmd_smoke ;;
*)
    echo "usage: bash $0 up|down|status|smoke" >&2
    exit 2
    ;;
esac
