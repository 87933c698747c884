#!/bin/sh
# Slurm Epilog (compute nodes, runs as root): slurm.conf  Epilog=/etc/slurm/epilog.d/troubleshoot.sh
# Writes troubleshoot-$SLURM_JOB_ID.txt next to a failed job's output, as the job's user.
# Never fails the epilog: `troubleshoot epilog` always exits 0 within its time budget.
exec /opt/troubleshoot/bin/troubleshoot epilog --role node --config /etc/troubleshoot/epilog.conf
