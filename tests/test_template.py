"""Templates of key lines: one error with other numbers groups together, different errors do not."""
import random

from gpu_troubleshooter.template import template_key, template_of


def test_masks_what_varies():
    assert template_of("srun: error: gpu-a017: task 3: Exited with exit code 1") == \
        "srun: error: <NODE>: task <NUM>: Exited with exit code <NUM>"
    assert template_of('FileNotFoundError: [Errno 2] No such file or directory: "/scratch/u123/run7/data.h5"') == \
        'FileNotFoundError: [Errno <NUM>] No such file or directory: "<PATH>"'
    assert template_of("ValueError: expected 0x7f3a9c000000 at 10.1.2.3:29500 after 12.5 GiB") == \
        "ValueError: expected <HEX> at <IP> after <NUM>"


def test_ten_variants_of_one_error_share_a_template():
    rng = random.Random(3)
    keys = set()
    for _ in range(10):
        line = (f"KeyError: 'sample_{rng.randint(0, 99999)}' in /home/u{rng.randint(1, 999)}/ds/shard-{rng.randint(0, 99)}.arrow "
                f"on node{rng.randint(100, 999)} rank{rng.randint(0, 63)} after {rng.random() * 1e4:.2f} s")
        keys.add(template_key(template_of(line)))
    assert len(keys) == 1


def test_different_errors_stay_apart():
    lines = [
        "ValueError: shapes (3,4) and (5,6) not aligned",
        "KeyError: 'labels'",
        "terminate called after throwing an instance of 'c10::Error'",
    ]
    assert len({template_key(template_of(x)) for x in lines}) == 3


def test_words_stay_words():
    # masking must not eat identifiers that carry the meaning of the error
    assert template_of("ModuleNotFoundError: No module named 'flash_attn'") == "ModuleNotFoundError: No module named 'flash_attn'"
