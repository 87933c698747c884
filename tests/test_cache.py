"""The on-disk cache: where it lives, what it trusts, how much it keeps."""
import os
import pickle
import time
from pathlib import Path

import pytest

from gpu_troubleshooter.cache import KEEP_PER_KIND, Cache, default_cache
from gpu_troubleshooter.engine import diagnose_text
from gpu_troubleshooter.knowledge import load_knowledge_base
from support import entry_yaml, run_cli

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


def test_a_kind_whose_name_starts_another_does_not_share_its_files(cache):
    """The scanner stores kinds "hs" and "hs-all": storing "hs" databases must
    neither count nor evict the "hs-all" ones (each kind keeps its own three)."""
    cache.store_bytes("hs-all", "a1", b"all", "db")
    os.utime(cache.root / "hs-all-a1.db", (0, 0))  # the oldest file of all: the first evicted were it an "hs" one
    for n in range(1, KEEP_PER_KIND + 2):
        cache.store_bytes("hs", f"k{n}", b"one", "db")
        os.utime(cache.root / f"hs-k{n}.db", (n, n))
    assert cache.load_bytes("hs-all", "a1", "db") == b"all"
    assert sorted(cache.keys("hs", "db")) == [f"k{n}" for n in range(2, KEEP_PER_KIND + 2)]
    assert cache.keys("hs-all", "db") == ["a1"]


def test_an_unwritable_cache_costs_time_not_answers(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    kb = load_knowledge_base([DEMO], bundled=False, cache=Cache(blocker / "cache"))
    assert [f.id for f in diagnose_text(OOM, kb).findings] == ["demo-oom"]
    assert load_knowledge_base([DEMO], bundled=False, cache=Cache(None)).get("demo-oom") is not None


def test_cached_entries_read_their_texts_only_when_asked_and_equal_the_parsed_ones(cache):
    from gpu_troubleshooter.knowledge import LazyEntry
    parsed = demo(cache)  # builds the cache
    held = demo(cache)
    entry = held.get("demo-oom")
    assert type(entry) is LazyEntry and "_blob" in entry.__dict__  # the texts are not unpickled yet
    diagnosis = diagnose_text(OOM, held)
    assert [f.id for f in diagnosis.findings] == ["demo-oom"] and "_blob" in entry.__dict__  # the scan needs no texts
    assert diagnosis.to_dict()["findings"][0]["title"].startswith("Demo GPU")
    assert "_blob" not in entry.__dict__  # showing the finding read them
    assert "_blob" in held.get("demo-nccl").__dict__  # an entry with no finding never pays for its texts
    assert held.entries == parsed.entries and held.problems == parsed.problems and held.site == parsed.site
    copy = pickle.loads(pickle.dumps(held.get("demo-nccl")))
    assert type(copy).__name__ == "Entry" and copy == parsed.get("demo-nccl") and repr(copy) == repr(held.get("demo-nccl"))


def test_a_damaged_text_in_the_cache_is_read_from_the_file_and_the_cache_dropped(cache):
    demo(cache)
    [cached] = cache.root.glob("kb-*.pickle")
    from gpu_troubleshooter.knowledge import _pickled
    obj = pickle.loads(cached.read_bytes())
    [held] = [e for e in obj[3] if e.id == "demo-oom"]
    held.__dict__["_blob"] = b"garbage"
    cached.write_bytes(_pickled(obj))
    entry = demo(cache).get("demo-oom")
    assert entry.title.get().startswith("Demo GPU") and entry.fixes
    assert not cached.exists()  # rebuilt on the next run
    assert demo(cache).get("demo-oom").title == entry.title


def test_after_a_change_only_the_changed_file_is_parsed_again(cache, tmp_path, monkeypatch):
    from gpu_troubleshooter import knowledge
    site = tmp_path / "site"
    site.mkdir()
    for n in range(4):
        (site / f"quirk-{n}.yaml").write_text(entry_yaml(f"quirk-{n}", f"SITE_QUIRK_{n}_MARKER"))
    load_knowledge_base([site], bundled=False, cache=cache)
    parsed = []
    real = knowledge.parse_entry
    monkeypatch.setattr(knowledge, "parse_entry", lambda path, trusted=False: parsed.append(path.name) or real(path, trusted))
    (site / "quirk-2.yaml").write_text(entry_yaml("quirk-2", "SITE_QUIRK_TWO_MARKER"))
    kb = load_knowledge_base([site], bundled=False, cache=cache)
    assert parsed == ["quirk-2.yaml"]
    assert [f.id for f in diagnose_text("x SITE_QUIRK_TWO_MARKER\nSITE_QUIRK_3_MARKER\n", kb).findings] == ["quirk-2", "quirk-3"]
    assert len(list(cache.root.glob("kb-*.pickle"))) == 2


def test_a_site_entry_the_scanner_rejects_gives_the_bundled_entry_of_its_id_back(tmp_path, monkeypatch):
    pytest.importorskip("hyperscan")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    site = tmp_path / "site"
    site.mkdir()
    (site / "cuda-oom.yaml").write_text(entry_yaml("cuda-oom", "", signature="regex: 'SITE_HS$MARKER'"))
    for _ in range(2):  # parsed, then from the cache
        kb = load_knowledge_base([site])
        [problem] = [p for p in kb.problems if p.file.endswith("cuda-oom.yaml")]
        assert problem.line == 7 and "rejected by the scanner" in problem.message
        assert kb.get("cuda-oom").path != str(site / "cuda-oom.yaml")
        assert [f.id for f in diagnose_text(OOM, kb).findings][0] == "cuda-oom"


def test_a_site_draft_the_scanner_rejects_is_reported_and_skipped(cache, tmp_path):
    pytest.importorskip("hyperscan")
    site = tmp_path / "site"
    site.mkdir()
    (site / "half-done.yaml").write_text(entry_yaml("half-done", "", signature="regex: 'SITE_HS$DRAFT'") + "draft: true\n")
    (site / "good.yaml").write_text(entry_yaml("good", "SITE_GOOD_MARKER"))
    for _ in range(2):
        kb = load_knowledge_base([site], bundled=False, cache=cache)
        [problem] = kb.problems
        assert problem.file.endswith("half-done.yaml") and problem.line == 7 and "rejected by the scanner" in problem.message
        assert not kb.drafts and kb.get("good") is not None


def test_entries_cached_by_other_code_are_not_reused_for_unchanged_files(cache, monkeypatch):
    from gpu_troubleshooter import knowledge
    demo(cache)
    monkeypatch.setattr(knowledge, "_VERSION", ["an-older-troubleshooter"])  # as after an upgrade
    parsed = []
    real = knowledge.parse_entry
    monkeypatch.setattr(knowledge, "parse_entry", lambda path, trusted=False: parsed.append(path.name) or real(path, trusted))
    assert demo(cache).get("demo-oom") is not None
    assert sorted(parsed) == ["demo-nccl.yaml", "demo-noise.yaml", "demo-oom.yaml", "demo-weak.yaml"]


def test_unchanged_files_are_known_by_their_stat_and_any_change_is_read(cache, tmp_path, monkeypatch):
    from gpu_troubleshooter import knowledge
    site = tmp_path / "site"
    site.mkdir()
    (site / "demo-oom.yaml").write_text((DEMO / "demo-oom.yaml").read_text())
    monkeypatch.setattr(knowledge, "_SETTLE_NS", -10**15)  # as if the file were old enough to be remembered
    first = load_knowledge_base([site], bundled=False, cache=cache)
    assert len(list(cache.root.glob("kbstat-*.txt"))) == 1
    real = knowledge._fingerprint
    monkeypatch.setattr(knowledge, "_fingerprint", lambda *a: pytest.fail("an unchanged file was read again"))
    assert load_knowledge_base([site], bundled=False, cache=cache).get("demo-oom") == first.get("demo-oom")
    monkeypatch.setattr(knowledge, "_fingerprint", real)
    # same size, new contents: its mtime/ctime differ, so the contents are read and the new title is used
    (site / "demo-oom.yaml").write_text((DEMO / "demo-oom.yaml").read_text().replace("Demo GPU", "Site GPU"))
    assert load_knowledge_base([site], bundled=False, cache=cache).get("demo-oom").title.get().startswith("Site GPU")


def test_a_file_changed_seconds_ago_is_not_remembered_by_its_stat(cache, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "demo-oom.yaml").write_text((DEMO / "demo-oom.yaml").read_text())
    load_knowledge_base([site], bundled=False, cache=cache)
    assert list(cache.root.glob("kb-*.pickle")) and not list(cache.root.glob("kbstat-*.txt"))


def test_a_damaged_stat_record_falls_back_to_the_contents(cache, tmp_path, monkeypatch):
    from gpu_troubleshooter import knowledge
    monkeypatch.setattr(knowledge, "_SETTLE_NS", -10**15)
    first = demo(cache)
    [record] = cache.root.glob("kbstat-*.txt")
    record.write_bytes(b"../../etc/passwd")
    assert demo(cache).get("demo-oom") == first.get("demo-oom")
