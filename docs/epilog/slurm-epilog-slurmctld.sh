#!/bin/sh
# Slurm EpilogSlurmctld (controller, runs as SlurmUser): slurm.conf  EpilogSlurmctld=/etc/slurm/troubleshoot-ctld.sh
# Posts the diagnosis to the web service and/or mails the user ([post] / [mail] in the config).
# The only hook that also runs after NODE_FAIL.
exec /opt/troubleshoot/bin/troubleshoot epilog --role slurmctld --config /etc/troubleshoot/epilog.conf
