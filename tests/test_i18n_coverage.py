"""How many entries are translated whole (title, summary, every cause and every fix) in
Croatian, Serbian and Korean: issue 9 section 4 asked for at least the 40 most common; all 553
are now (2026-11-29), and an English edit that leaves a translation stale must not silently
drop the count below the floor."""
import yaml

from gpu_troubleshooter.i18n import translate_entry
from gpu_troubleshooter.knowledge import bundled_dir, entry_files

WHOLE_AT_LEAST = 545   # of 553 whole (2026-11-29); room for a few English edits before their translation

# The most common failures (helpdesk frequency, the seed guides' topics): each must stay
# translated whole, so a stale field in one of them is noticed by name, not only by count.
MOST_COMMON = ["cuda-oom", "host-oom-killed", "slurm-time-limit", "disk-quota-exceeded",
               "nccl-failure", "cuda-driver-too-old", "slurm-invalid-account-partition",
               "slurm-time-limit-invalid", "lmod-module-unknown", "torch-dist-connect-timeout",
               "torch-dataloader-worker-exited", "cuda-invalid-device-ordinal", "hf-no-internet-on-compute-node",
               "container-no-gpu", "python-module-missing", "docker-not-available-on-hpc",
               # the most frequent labels of the held-out set and the high-frequency candidates
               "nvidia-container-toolkit-broken", "torch-extension-abi-mismatch", "flash-attn-unsupported-gpu",
               "slurm-submit-filter-rejected", "cublas-execution-failed", "gpu-busy-exclusive-mode",
               "torch-ddp-unused-parameters", "torch-state-dict-key-mismatch", "hf-gated-repo-auth"]


def whole_entries():
    out, partial = [], {}
    for path in entry_files(bundled_dir()):
        entry = yaml.safe_load(path.read_text(encoding="utf-8"))
        fell = {lang: translate_entry(entry, path, lang).fell_back for lang in ("hr", "sr", "ko")}
        if any(fell.values()):
            partial[entry["id"]] = {lang: f for lang, f in fell.items() if f}
        else:
            out.append(entry["id"])
    return out, partial


def test_at_least_220_entries_are_translated_whole():
    whole, _ = whole_entries()
    assert len(whole) >= WHOLE_AT_LEAST, f"only {len(whole)} entries are translated whole: {sorted(whole)}"


def test_the_most_common_entries_are_translated_whole():
    _, partial = whole_entries()
    missing = {i: partial[i] for i in MOST_COMMON if i in partial}
    assert not missing, f"fields shown in another language (stale or untranslated): {missing}"


def test_a_whole_entry_shows_no_english_prose_in_korean():
    """translate_entry's fell_back is what the count trusts: check it against the text itself
    for the Korean files (Hangul in every translated field), so the count cannot pass on
    English text stored as a 'translation'."""
    import re
    hangul = re.compile(r"[\uac00-\ud7a3]")
    whole, _ = whole_entries()
    paths = {p.stem: p for p in entry_files(bundled_dir())}
    without = []
    for eid in whole:
        entry = yaml.safe_load(paths[eid].read_text(encoding="utf-8"))
        t = translate_entry(entry, paths[eid], "ko")
        texts = [t.title, t.summary, *t.causes] + [f["title"] for f in t.fixes] + [f["text"] for f in t.fixes if f["text"]]
        without += [(eid, s[:60]) for s in texts if not hangul.search(s)]
    assert not without, without[:10]
