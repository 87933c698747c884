"""A warning does not end a job: when a log holds a warning finding and an error finding,
the error comes first unless the warning declares that it leads to it (engine.rank)."""
from gpu_troubleshooter.engine import diagnose_text

# dask's unmanaged-memory warning (0.7) beside a bare KilledWorker (dask-worker-memory-killed, 0.6)
DASK = (
    "distributed.worker.memory - WARNING - Unmanaged memory use is high. This may indicate a memory leak or the "
    "memory may not be released to the OS; see https://distributed.dask.org/en/latest/worker-memory.html for more "
    "information. -- Unmanaged memory: 3.80 GiB -- Worker memory limit: 4.00 GiB\n"
    "KilledWorker: Attempted to run task ('x', 3) on 3 different workers, but all those workers died while "
    "running it.\n"
)


def test_the_error_that_ended_the_job_ranks_above_a_warning(kb):
    findings = diagnose_text(DASK, kb).findings
    ids = [f.id for f in findings]
    assert ids[:2] == ["dask-worker-memory-killed", "dask-worker-unmanaged-memory"], ids
    warning = next(f for f in findings if f.id == "dask-worker-unmanaged-memory")
    error = next(f for f in findings if f.id == "dask-worker-memory-killed")
    assert warning.confidence > error.confidence   # the order is not the confidence order
