"""A broken GPU makes CUDA, NCCL and nvidia-smi fail in its wake. When the node's own
evidence (an Xid, "fallen off the bus", an uncorrectable ECC error, no device handle) is
in the same log as the cascade, the node fault ranks first (`leads_to` of gpu-node-faulty
and its finer entries); the cascade alone keeps its own entry. The lines are the
libraries' and the driver's message formats, not example logs."""
import pytest

from gpu_troubleshooter.engine import diagnose_text

NCCL = ("RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, "
        "unhandled cuda error, NCCL version 2.14.3\n")
BUSY = "RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable\n"
UNKNOWN = ("UserWarning: CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up "
           "environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. "
           "Setting the available devices to be zero.\n")
OFF_BUS = "NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
HANDLE = "Unable to determine the device handle for GPU 0000:09:00.0: Unknown Error\n"
ECC = "RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
XID = "NVRM: Xid (PCI:0000:3b:00): 74, pid=1234, name=python, NVLink: fatal error detected on link 2\n"


def first(kb, text):
    ids = [f.id for f in diagnose_text(text, kb).findings]
    return ids[0] if ids else None


@pytest.mark.parametrize("cascade, own", [(NCCL, "nccl-unhandled-cuda-error"), (BUSY, "gpu-busy-exclusive-mode"),
                                          (UNKNOWN, "cuda-init-unknown-error")])
@pytest.mark.parametrize("node, fault", [(OFF_BUS, "gpu-fallen-off-bus"), (HANDLE, "gpu-fallen-off-bus"),
                                         (ECC, "gpu-ecc-uncorrectable"), (XID, "gpu-xid-error")])
def test_node_evidence_ranks_above_the_cascade(kb, cascade, own, node, fault):
    assert first(kb, cascade) == own
    assert first(kb, cascade + node) == fault
    assert first(kb, node + cascade) == fault
