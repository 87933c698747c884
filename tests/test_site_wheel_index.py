"""The PyTorch wheel index: chosen from the driver or the GPU found in the log (else the probe's
facts), unless the site's `_site.yaml` sets `torch_wheel_index_override`, which then wins.
Also the two small additions to the condition language this needs: `site.NAME` and `first`."""
import json
import os
import re
import subprocess
import sys

import pytest

from gpu_troubleshooter.engine import diagnose_text
from gpu_troubleshooter.facts import SITE_SETTINGS, evaluate, validate_condition
from gpu_troubleshooter.knowledge import bundled_dir, load_knowledge_base
from gpu_troubleshooter.view import site_settings

DRIVER_12_2 = "RuntimeError: The NVIDIA driver on your system is too old (found version 12020). Please update your GPU driver"
BLACKWELL = ("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.\n"
             "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.")
NO_NUMBERS = "CUDA driver version is insufficient for CUDA runtime version"
MIRROR = "https://pypi.example.edu/whl/cu128"


@pytest.fixture(scope="module")
def kb():
    return load_knowledge_base()


def fixes(kb, log, entry_id, site=None, facts=None):
    d = diagnose_text(log, kb)
    finding = [f for f in d.findings if f.id == entry_id][0]
    view = finding.view(kb, site=site_settings({**kb.site, **(site or {})}) if site else None, facts=facts)
    return [(f.title, f.held, f.code.text if f.code else "") for f in view.fixes]


def test_the_driver_in_the_log_chooses_the_index_and_rules_out_the_others(kb):
    got = fixes(kb, DRIVER_12_2, "cuda-driver-too-old")
    assert got[0][0].startswith("Driver supports CUDA 12.0 to 12.7") and got[0][1] is True
    assert "whl/cu126" in got[0][2]
    held = {title.split(" - ")[0]: h for title, h, _ in got}
    # the log's figure decides: the other wheel choices are false, not "unknown" and shown second
    assert held["Driver supports only CUDA 11"] is False and held["Driver supports CUDA 12.8 or 12.9"] is False
    assert held["Install PyTorch from the wheel index your site chose for its nodes"] is False


def test_the_gpu_in_the_log_rules_out_the_other_architecture(kb):
    got = fixes(kb, BLACKWELL, "gpu-arch-unsupported")
    assert got[0][0].startswith("Blackwell GPU") and got[0][1] is True
    held = {title: h for title, h, _ in got}
    assert held["Pascal or Volta GPU (P100, V100, GTX 10xx) - install the cu126 wheels"] is False
    assert held["torch.compile on pre-Volta GPUs"] is False


def test_probe_facts_decide_when_the_log_has_no_figure(kb):
    got = fixes(kb, NO_NUMBERS, "cuda-driver-too-old", facts={"gpu": {"driver_version": "575.51.03"}})
    assert got[0][0].startswith("Driver supports CUDA 12.8 or 12.9") and "whl/cu128" in got[0][2]
    unknown = fixes(kb, NO_NUMBERS, "cuda-driver-too-old")
    assert all(h is None for t, h, _ in unknown if t.startswith("Driver supports"))


@pytest.mark.parametrize("log,entry_id", [(DRIVER_12_2, "cuda-driver-too-old"), (BLACKWELL, "gpu-arch-unsupported")])
def test_the_sites_override_wins_over_the_chosen_index(kb, log, entry_id):
    got = fixes(kb, log, entry_id, site={"torch_wheel_index_override": MIRROR})
    title, held, code = got[0]
    assert title == "Install PyTorch from the wheel index your site chose for its nodes" and held is True
    assert f"--index-url {MIRROR}" in code
    shown = [c for _, h, c in got if h is not False]
    assert not [c for c in shown if re.search(r"download\.pytorch\.org/whl/cu\d+", c)], shown
    assert all(h is False for t, h, _ in got if t.startswith(("Driver supports", "Pascal or Volta", "Blackwell")))


def test_override_by_variant_name_and_placeholder(kb):
    site = site_settings({"torch_wheel_index": "https://download.pytorch.org/whl/cu126",
                          "torch_wheel_index_override": "cu130"})
    assert site["torch_wheel_index_override"] == site["torch_wheel_index"] == "https://download.pytorch.org/whl/cu130"
    assert site_settings({"torch_wheel_index": "x"}) == {"torch_wheel_index": "x"}    # unset: nothing changes
    # fixes that only know the site's index ({site.torch_wheel_index}) follow the override too
    d = diagnose_text("AssertionError: Torch not compiled with CUDA enabled", kb)
    view = [f for f in d.findings if f.id == "torch-cpu-build"][0].view(kb, site={**kb.site, **site})
    assert any("--index-url https://download.pytorch.org/whl/cu130" in f.code.text for f in view.fixes if f.code)


def test_cli_reads_the_override_from_a_site_folder(tmp_path):
    (tmp_path / "_site.yaml").write_text(f"placeholders:\n  torch_wheel_index_override: \"{MIRROR}\"\n",
                                         encoding="utf-8")
    log = tmp_path / "job.out"
    log.write_text(DRIVER_12_2 + "\n", encoding="utf-8")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def first_fix(*args):
        out = subprocess.run([sys.executable, "-m", "gpu_troubleshooter.cli", *args, str(log), "--json"],
                             capture_output=True, text=True, env=env, timeout=120)
        return json.loads(out.stdout)["findings"][0]["fixes"][0]
    with_site = first_fix("--kb", str(tmp_path))
    assert with_site["held"] is True and MIRROR in with_site["code"]["text"]
    bundled = first_fix()
    assert bundled["title"].startswith("Driver supports CUDA 12.0 to 12.7") and MIRROR not in bundled["code"]["text"]


def test_first_the_first_known_part_decides():
    ns = {"value": {"sm": "120"}, "gpu": {"devices": [{"compute_capability": "6.0"}]}}
    cond = {"first": [{"fact": "value.sm", "as": "number", "lt": 75},
                      {"fact": "gpu.devices.0.compute_capability", "as": "version", "lt": "7.5"}]}
    assert evaluate(cond, ns) is False                       # the log's sm_120 decides, not the probe's 6.0
    assert evaluate(cond, {"gpu": ns["gpu"]}) is True        # no figure in the log: the probe's
    assert evaluate(cond, {}) is None
    assert evaluate({"any": cond["first"]}, ns) is True      # `any` would have let the probe win
    assert "non-empty list" in " ".join(validate_condition({"first": []}))


def test_site_settings_in_conditions():
    assert evaluate({"fact": "site.torch_wheel_index_override", "exists": False}, {"site": {}}) is True
    assert evaluate({"fact": "site.torch_wheel_index_override", "exists": True}, {"site": {}}) is False
    assert evaluate({"fact": "site.torch_wheel_index_override", "exists": True},
                    {"site": {"torch_wheel_index_override": MIRROR}}) is True
    assert validate_condition({"fact": "site.torch_wheel_index_override", "exists": True}) == []
    assert "unknown site setting" in " ".join(validate_condition({"fact": "site.torch_index", "exists": True}))


def test_every_documented_site_setting_is_readable_by_conditions():
    text = (bundled_dir() / "_site.yaml").read_text(encoding="utf-8")
    # settings, set or commented out:  `  name: value  # note`  or  `  # name: "value"`
    names = set(re.findall(r'^  (?:# )?([a-z_]+): ("[^"]*"|\S+)[ \t]*(?:#.*)?$', text, re.M))
    names = {n for n, _ in names}
    assert names and names <= SITE_SETTINGS, names - SITE_SETTINGS
    assert {"torch_wheel_index_override", "helpdesk_url", "gpu_partition"} <= names
