"""The on-disk cache: where it lives, what it trusts, how much it keeps."""
import os
import pickle
import time
from pathlib import Path

import pytest

from gpu_troubleshooter.cache import KEEP_PER_KIND, Cache, default_cache
from gpu_troubleshooter.engine import diagnose_text
from gpu_troubleshooter.knowledge import load_knowledge_base
from support import run_cli

DEMO = Path(__file__).parent / "fixtures" / "kb" / "demo"
OOM = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 1.20 GiB free)\n"


@pytest.fixture
def cache(tmp_path):
    return Cache(tmp_path / "cache")


def demo(cache):
    return load_knowledge_base([DEMO], bundled=False, cache=cache)


def test_xdg_cache_home_is_honoured_and_a_missing_home_means_no_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache().root == tmp_path / "xdg" / "gpu-troubleshooter"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "no" / "such" / "home"))
    assert default_cache().root is None
    monkeypatch.setenv("HOME", "~")  # what expanduser leaves for a uid without a passwd entry
    assert default_cache().root is None


def test_cli_never_creates_a_missing_home_or_a_tilde_folder(tmp_path):
    log = tmp_path / "x.out"
    log.write_text(OOM)
    env = {"HOME": str(tmp_path / "gone"), "XDG_CACHE_HOME": "", "TROUBLESHOOT_KB": str(DEMO),
           "TROUBLESHOOT_BUNDLED_KB": "0"}
    r = run_cli(log, env=env)
    assert r.returncode == 1 and not (tmp_path / "gone").exists() and not Path("~").exists()


def test_the_key_is_the_contents_not_the_mtime(cache, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "demo-oom.yaml").write_text((DEMO / "demo-oom.yaml").read_text())
    first = load_knowledge_base([site], bundled=False, cache=cache)
    os.utime(site / "demo-oom.yaml", (time.time() + 100, time.time() + 100))
    assert load_knowledge_base([site], bundled=False, cache=cache).get("demo-oom") == first.get("demo-oom")
    (site / "demo-oom.yaml").write_text((DEMO / "demo-oom.yaml").read_text().replace("Demo GPU", "Site GPU"))
    assert load_knowledge_base([site], bundled=False, cache=cache).get("demo-oom").title.get().startswith("Site GPU")


BAD_PICKLES = {
    "truncated": lambda good: good[:len(good) // 2],
    "garbage": lambda good: b"not a pickle at all",
    "empty": lambda good: b"",
    "unsupported protocol": lambda good: b"\x80\x09x",
    "None": lambda good: pickle.dumps(None),
    "an int": lambda good: pickle.dumps(7),
    "old shape": lambda good: pickle.dumps(({}, [])),
    "right shape, no entries": lambda good: pickle.dumps(("gpu-troubleshooter-kb", "other-key", {}, [], {})),
}


@pytest.mark.parametrize("damage", BAD_PICKLES, ids=list(BAD_PICKLES))
def test_a_damaged_or_wrong_cached_kb_is_rebuilt_not_trusted(cache, damage):
    demo(cache)
    [cached] = cache.root.glob("kb-*.pickle")
    cached.write_bytes(BAD_PICKLES[damage](cached.read_bytes()))
    kb = demo(cache)
    assert [f.id for f in diagnose_text(OOM, kb).findings] == ["demo-oom"]
    assert demo(cache).get("demo-oom") is not None  # and the cache was healed


def test_at_most_three_files_per_kind_and_no_temporary_files(cache):
    for n in range(6):
        assert cache.store_bytes("hs", f"key{n}", b"x" * n, "db")
        os.utime(cache.root / f"hs-key{n}.db", (n, n))  # an older access time for older keys
    cache.store_bytes("kb", "k", b"y", "pickle")
    names = sorted(p.name for p in cache.root.iterdir())
    assert KEEP_PER_KIND == 3 and names == ["hs-key3.db", "hs-key4.db", "hs-key5.db", "kb-k.pickle"]


def test_an_unwritable_cache_costs_time_not_answers(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    kb = load_knowledge_base([DEMO], bundled=False, cache=Cache(blocker / "cache"))
    assert [f.id for f in diagnose_text(OOM, kb).findings] == ["demo-oom"]
    assert load_knowledge_base([DEMO], bundled=False, cache=Cache(None)).get("demo-oom") is not None
