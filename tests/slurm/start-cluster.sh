#!/usr/bin/env bash
# A one-node Slurm cluster for the tests, started without systemd.
#
#   tests/slurm/start-cluster.sh          start (idempotent: a running cluster is kept)
#   tests/slurm/start-cluster.sh stop     stop the daemons it started
#
# Needs root and Debian's packages: slurm-wlm slurmdbd munge mariadb-server
# (.ci/run installs them). It starts munged, MariaDB (Debian's default socket,
# which slurmdbd finds), slurmdbd, slurmctld and one slurmd on this machine:
#   - one node named after this host, 2 fake GPUs of type "testgpu" (gres
#     declared on two character devices made with mknod: a gres with Count=
#     and no File= is silently dropped and the node goes INVAL);
#   - partitions "gpu" (default, MaxTime 10 min) and "cpu" (MaxTime 5 min);
#   - DefMemPerCPU, or one job would take the whole node;
#   - task/cgroup + proctrack/cgroup on cgroup v1 when writable, so a job over
#     --mem ends OUT_OF_MEMORY (falls back to linuxproc: then FAILED 0:9);
#   - accounting in slurmdbd with gres/gpu tracked, so sacct shows AllocTRES.
# Everything lives under $STATE (default /var/tmp/troubleshoot-slurm); the
# config goes to /etc/slurm (where every Slurm command looks for it).
# Prints the seconds the start-up took on its last line.
set -euo pipefail

STATE=${TROUBLESHOOT_SLURM_STATE:-/var/tmp/troubleshoot-slurm}
CONF=/etc/slurm
HOST=$(hostname -s)
start_ns=$(date +%s%N)

log() { echo "start-cluster: $*" >&2; }

stop_all() {
  for d in slurmd slurmctld slurmdbd; do
    if [ -f "$STATE/run/$d.pid" ]; then kill "$(cat "$STATE/run/$d.pid")" 2>/dev/null || true; fi
  done
  sleep 1
  if [ -f "$STATE/run/mariadb.pid" ]; then kill "$(cat "$STATE/run/mariadb.pid")" 2>/dev/null || true; fi
  if [ -f "$STATE/run/munged.pid" ]; then kill "$(cat "$STATE/run/munged.pid")" 2>/dev/null || true; fi
}

if [ "${1:-}" = stop ]; then stop_all; exit 0; fi

[ "$(id -u)" = 0 ] || { log "needs root"; exit 1; }
for cmd in munged mariadbd slurmdbd slurmctld slurmd sbatch; do
  command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || { log "missing $cmd (apt-get install slurm-wlm slurmdbd munge mariadb-server)"; exit 1; }
done
export PATH=$PATH:/usr/sbin

alive() { [ -f "$STATE/run/$1.pid" ] && kill -0 "$(cat "$STATE/run/$1.pid")" 2>/dev/null; }

if alive slurmctld && alive slurmd && scontrol ping >/dev/null 2>&1; then
  log "already running"; echo "0.0"; exit 0
fi

mkdir -p "$STATE"/{spool/ctld,spool/d,log,run} "$CONF" /run/munge /run/mysqld
chown -R slurm:slurm "$STATE/spool"
chmod 755 "$STATE"; chmod 1777 "$STATE/log" "$STATE/run"   # each daemon writes its own pid and log

# --- munge: its log and socket directories must belong to the munge user.
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  [ -s /etc/munge/munge.key ] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 2>/dev/null; }
  chown munge:munge /etc/munge /etc/munge/munge.key /run/munge
  chmod 700 /etc/munge; chmod 400 /etc/munge/munge.key; chmod 755 /run/munge
  mkdir -p /var/log/munge /var/lib/munge; chown munge:munge /var/log/munge /var/lib/munge
  su -s /bin/sh munge -c "/usr/sbin/munged" || { log "munged failed: $(tail -3 /var/log/munge/munged.log)"; exit 1; }
  for _ in $(seq 50); do [ -s /run/munge/munged.pid ] && break; sleep 0.1; done
  cp /run/munge/munged.pid "$STATE/run/munged.pid"
fi

# --- MariaDB on Debian's default socket.
if ! alive mariadb; then
  chown mysql:root /run/mysqld
  [ -d /var/lib/mysql/mysql ] || mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
  /usr/sbin/mariadbd --user=mysql --datadir=/var/lib/mysql --socket=/run/mysqld/mysqld.sock \
    --skip-networking=0 --bind-address=127.0.0.1 --pid-file="$STATE/run/mariadb.pid" \
    --log-error="$STATE/log/mariadb.log" >/dev/null 2>&1 &
  for _ in $(seq 100); do [ -S /run/mysqld/mysqld.sock ] && mariadb -e 'select 1' >/dev/null 2>&1 && break; sleep 0.1; done
  mariadb -e 'select 1' >/dev/null 2>&1 || { log "MariaDB did not start: $(tail -3 "$STATE/log/mariadb.log")"; exit 1; }
fi
mariadb -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
  CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurmtest';
  GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;"

# --- fake GPUs: character devices gres.conf can point at.
for i in 0 1; do [ -e "/dev/fakegpu$i" ] || mknod "/dev/fakegpu$i" c 1 3; done

# --- cgroup v1 with a writable memory controller: task/cgroup; else no cgroups.
if [ -w /sys/fs/cgroup/memory ] && [ -d /sys/fs/cgroup/freezer ] && [ ! -e /sys/fs/cgroup/cgroup.controllers ]; then
  TASK=task/cgroup,task/affinity; PROCTRACK=proctrack/cgroup; GATHER=jobacct_gather/cgroup
  cat > "$CONF/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
ConstrainCores=no
ConstrainRAMSpace=yes
ConstrainSwapSpace=no
ConstrainDevices=no
EOF
else
  TASK=task/none; PROCTRACK=proctrack/linuxproc; GATHER=jobacct_gather/linux
  rm -f "$CONF/cgroup.conf"
fi
# 4 CPUs even on a 2-core machine (config_overrides): the TIMEOUT job runs in
# the background while the other test jobs run.
CPUS=$(( $(nproc) < 4 ? 4 : $(nproc) ))

cat > "$CONF/slurm.conf" <<EOF
# written by tests/slurm/start-cluster.sh
ClusterName=troubleshoot
SlurmctldHost=$HOST
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=$STATE/spool/ctld
SlurmdSpoolDir=$STATE/spool/d
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
ProctrackType=$PROCTRACK
TaskPlugin=$TASK
JobAcctGatherType=$GATHER
JobAcctGatherFrequency=5
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=$HOST
AccountingStorageTRES=gres/gpu,gres/gpu:testgpu
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=200
GresTypes=gpu
ReturnToService=2
KillWait=5
MinJobAge=600
InactiveLimit=0
MpiDefault=none
SlurmdParameters=config_overrides
SwitchType=switch/none
# The epilog hooks: each runs $STATE/hooks/<name> when a test installed one.
Epilog=$STATE/epilog-node.sh
EpilogSlurmctld=$STATE/epilog-slurmctld.sh
NodeName=$HOST CPUs=$CPUS RealMemory=2000 Gres=gpu:testgpu:2 State=UNKNOWN
PartitionName=gpu Nodes=$HOST Default=YES MaxTime=10:00 State=UP
PartitionName=cpu Nodes=$HOST MaxTime=5:00 State=UP
EOF
mkdir -p "$STATE/hooks"; chmod 1777 "$STATE/hooks"
for hook in node slurmctld; do
  printf '#!/bin/sh\n# written by tests/slurm/start-cluster.sh: run the hook a test installed, if any\n[ -x "%s" ] && exec "%s"\nexit 0\n' \
    "$STATE/hooks/$hook" "$STATE/hooks/$hook" > "$STATE/epilog-$hook.sh"
  chmod 755 "$STATE/epilog-$hook.sh"
done
cat > "$CONF/gres.conf" <<EOF
NodeName=$HOST Name=gpu Type=testgpu File=/dev/fakegpu[0-1]
EOF
cat > "$CONF/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=$HOST
SlurmUser=slurm
LogFile=$STATE/log/slurmdbd.log
PidFile=$STATE/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=slurmtest
StorageLoc=slurm_acct_db
EOF
chown slurm:slurm "$CONF/slurmdbd.conf"; chmod 600 "$CONF/slurmdbd.conf"

if ! alive slurmdbd; then
  /usr/sbin/slurmdbd
  for _ in $(seq 100); do sacctmgr -n list cluster >/dev/null 2>&1 && break; sleep 0.1; done
  sacctmgr -n list cluster >/dev/null 2>&1 || { log "slurmdbd did not start: $(tail -3 "$STATE/log/slurmdbd.log")"; exit 1; }
fi
sacctmgr -i -Q add cluster troubleshoot >/dev/null 2>&1 || true
if ! alive slurmctld; then /usr/sbin/slurmctld; fi
if ! alive slurmd; then /usr/sbin/slurmd; fi
for _ in $(seq 150); do
  state=$(sinfo -h -N -n "$HOST" -o %T 2>/dev/null || true)
  case "$state" in idle*|mixed*|alloc*) break ;; esac
  sleep 0.2
done
case "$state" in
  idle*|mixed*|alloc*) ;;
  *) log "node is '$state', not idle: $(tail -5 "$STATE/log/slurmctld.log" "$STATE/log/slurmd.log")"; exit 1 ;;
esac
end_ns=$(date +%s%N)
log "cluster up: node $HOST ($TASK), partitions gpu (default) and cpu, gres gpu:testgpu:2"
awk "BEGIN{printf \"%.1f\n\", ($end_ns-$start_ns)/1e9}"
