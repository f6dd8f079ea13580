#!/bin/sh
# Starts a single-node Slurm (munged, slurmctld, slurmd) on this host for
# the Slurm executor tests. Idempotent: daemons already running are left
# alone. Needs root and the Debian packages slurm-wlm and munge.
# ProctrackType=proctrack/linuxproc and TaskPlugin=task/none avoid cgroups,
# which containers usually do not delegate.
set -eu
host=$(hostname -s)
cpus=$(nproc)
mem=$(awk '/MemTotal/ {print int($2/1024*0.8)}' /proc/meminfo)
conf=/etc/slurm/slurm.conf
state=/var/spool/slurmctld
mkdir -p /etc/slurm "$state" /var/spool/slurmd /var/log/slurm /run/munge /var/lib/munge /var/log/munge /etc/munge

want=$(cat <<CONF
# Written by d5list runner/testdata/slurm/start.sh for tests.
ClusterName=d5test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$state
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
MinJobAge=300
KillWait=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MpiDefault=none
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
)
if [ ! -f "$conf" ] || [ "$(cat "$conf")" != "$want" ]; then
  printf '%s\n' "$want" > "$conf"
  changed=1
else
  changed=0
fi

if [ ! -s /etc/munge/munge.key ]; then
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
fi
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
chmod 0400 /etc/munge/munge.key
chmod 0755 /run/munge

running() { pgrep -x "$1" >/dev/null 2>&1; }
if ! running munged; then
  if id munge >/dev/null 2>&1; then
    su -s /bin/sh munge -c /usr/sbin/munged 2>/dev/null || /usr/sbin/munged --force
  else
    /usr/sbin/munged --force
  fi
fi
if [ "$changed" = 1 ] && running slurmctld; then
  scontrol reconfigure || true
fi
if ! running slurmctld; then
  /usr/sbin/slurmctld
fi
if ! running slurmd; then
  /usr/sbin/slurmd
fi
# A node left DOWN by an earlier run (ReturnToService covers most cases).
scontrol update NodeName="$host" State=RESUME >/dev/null 2>&1 || true
