"""nvidia-smi parsers on recorded outputs of real drivers (tests/fixtures/nvidia-smi/SOURCES.md)."""
import pytest

from probe_helpers import SMI

from gpu_troubleshooter.probes.node_probe import parse_pmon, parse_smi_csv, parse_smi_table

TABLES = {
    # file: (driver, cuda, [(index, name, used MiB, total MiB, util %)], processes)
    "table-410.48-tesla-v100-dgxs.txt": ("410.48", None, [(0, "Tesla V100-DGXS...", 449, 32478, 0)], 0),
    "table-450.57-titan-xp.txt": ("450.57", "11.0", [(0, "TITAN Xp", 7, 12196, 0)], 0),
    "table-470.182.03-tesla-v100.txt": ("470.182.03", "11.4", [(0, "Tesla V100-SXM2...", 0, 16160, 1)], 0),
    "table-515.48.07-a100x3.txt": ("515.48.07", "11.7", [(0, "NVIDIA A100-SXM...", 7488, 81920, 100),
                                                           (1, "NVIDIA A100-SXM...", 7500, 81920, 100),
                                                           (2, "NVIDIA A100-SXM...", 7500, 81920, 99)], 0),
    "table-535.86.10-a800-mig.txt": ("535.86.10", "12.2", [(0, "NVIDIA A800-SXM4-80GB", 36537, 81920, None)], 0),
    "table-550.135-tesla-p4.txt": ("550.135", "12.4", [(0, "Tesla P4", 7719, 8192, 6)], 0),
    "table-570.133.20-l4.txt": ("570.133.20", "12.8", [(0, "NVIDIA L4", 0, 23034, 0)], 0),
    "table-580.173.02-h200.txt": ("580.173.02", "13.0", [(0, "NVIDIA H200", 0, 143771, 0)], 0),
    "table-595.71.05-rtx2080super-load.txt": ("595.71.05", "13.2", [(0, "NVIDIA GeForce RTX 2080 ...", 819, 8192, 8)], 4),
}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_default_table_of_each_driver(name):
    driver, cuda, gpus, nprocs = TABLES[name]
    t = parse_smi_table((SMI / name).read_text())
    assert t["driver_version"] == driver and t["cuda_driver_version"] == cuda
    got = [(g["index"], g["name"], g["memory_used_mib"], g["memory_total_mib"], g["utilization_pct"]) for g in t["gpus"]]
    assert got == gpus
    assert len(t["processes"]) == nprocs


def test_table_process_rows():
    t = parse_smi_table((SMI / "table-595.71.05-rtx2080super-load.txt").read_text())
    assert [(p["pid"], p["type"], p["name"], p["used_memory_mib"]) for p in t["processes"]] == [
        (1696, "G", "/usr/bin/gnome-shell", 176), (4584, "G", "/usr/bin/Xwayland", 3),
        (5267, "C", "ffmpeg", 230), (5268, "C", "ffmpeg", 370)]
    assert t["gpus"][0]["pci_bus_id"] == "00000000:0C:00.0" and t["gpus"][0]["compute_mode"] == "Default"


def test_table_without_header_is_an_error():
    with pytest.raises(ValueError):
        parse_smi_table("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")


def test_query_gpu_csv_with_units_and_na():
    rows = parse_smi_csv((SMI / "query-gpu-580.173.02-h200.csv").read_text())
    assert len(rows) == 1
    r = rows[0]
    assert r["name"] == "NVIDIA H200" and r["driver_version"] == "580.173.02" and r["compute_cap"] == "9.0"
    assert r["memory.total"] == 143771 and r["memory.used"] == 0 and r["utilization.gpu"] == 0
    assert r["power.draw"] == 85.12 and r["clocks.max.sm"] == 1980 and r["fan.speed"] is None
    assert r["ecc.errors.uncorrected.volatile.total"] == 0 and r["ecc.mode.current"] == "Enabled"
    assert r["pci.bus_id"] == "00000000:83:00.0"
    assert r["display_mode"] is None      # "[Requested functionality has been deprecated]"


def test_driver_version_that_looks_like_a_number_stays_text():
    rows = parse_smi_csv("index, driver_version, compute_cap\n0, 550.135, 8.0\n")
    assert rows == [{"index": 0, "driver_version": "550.135", "compute_cap": "8.0"}]


def test_query_compute_apps_csv():
    rows = parse_smi_csv((SMI / "query-compute-apps-595.71.05-rtx2080super-load.csv").read_text())
    assert [(r["pid"], r["process_name"], r["used_gpu_memory"]) for r in rows] == [(5268, "ffmpeg", 370),
                                                                                  (5267, "ffmpeg", 230)]


def test_pmon():
    rows = parse_pmon((SMI / "pmon-595.71.05-rtx2080super-load.txt").read_text())
    assert len(rows) == 8
    assert rows[2] == {"gpu": 0, "pid": 5267, "type": "C", "sm_pct": 7, "mem_pct": 3, "command": "ffmpeg"}
    assert rows[3]["sm_pct"] is None
