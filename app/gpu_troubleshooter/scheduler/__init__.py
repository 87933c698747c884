"""What the batch scheduler knows about a job, as facts (docs/probe-facts.md, "scheduler.*").

    slurm.py   sacct / scontrol show job -> facts, the job's output files
    pbs.py     qstat -xf -> the same facts
    run.py     the one place that runs scheduler commands (argument lists, timeouts)
    job.py     `troubleshoot job JOBID`
    check.py   `troubleshoot check job.sh`
    epilog.py  the epilog hook that diagnoses failed jobs

Standard library only; nothing here imports the web service.
"""

# States where the job did not end well. NODE_FAIL, BOOT_FAIL and PREEMPTED
# are the system's doing, not the user's program.
FAILED_STATES = ("FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "PREEMPTED", "DEADLINE", "CANCELLED")
NOT_USER_FAULT = ("NODE_FAIL", "BOOT_FAIL", "PREEMPTED")
