"""record.dataclass (the start-up-cheap records) behaves as dataclasses.dataclass for what the records use."""
import dataclasses
import os
import pickle
import subprocess
import sys

import pytest

from gpu_troubleshooter import record
from gpu_troubleshooter.findings import Evidence, Finding
from gpu_troubleshooter.model import Entry, Signature, Text


def _pair(frozen=True):
    """The same class declared with the standard decorator and with record's."""
    out = []
    for deco, field in ((dataclasses.dataclass, dataclasses.field), (record.dataclass, record.field)):
        @deco(frozen=frozen)
        class Point:
            x: int
            label: str = "p"
            tags: tuple = ()
            seen: list = field(default_factory=list, compare=False)
            note: str = field(default="", repr=False)
        out.append(Point)
    return out


@pytest.mark.parametrize("frozen", [True, False])
def test_same_init_eq_repr_hash_as_dataclasses(frozen):
    std, ours = _pair(frozen)
    for args, kwargs in (((1,), {}), ((1, "a", (2,)), {}), ((), {"x": 3, "note": "n"}), ((4,), {"seen": [1]})):
        a, b = std(*args, **kwargs), ours(*args, **kwargs)
        assert repr(a).replace("Point", "") == repr(b).replace("Point", "")
        assert {f.name: getattr(a, f.name) for f in dataclasses.fields(a)} == {n: getattr(b, n) for n in
                                                                               (f.name for f in record.fields(b))}
        assert b == ours(*args, **kwargs) and not (b != ours(*args, **kwargs))
        assert (b == std(*args, **kwargs)) is False  # another class is never equal, as in dataclasses
        if frozen:
            assert hash(a) == hash(b)
        else:
            with pytest.raises(TypeError):
                hash(b)
    assert ours(1, seen=[1]) == ours(1, seen=[2])          # compare=False is left out of equality
    assert ours(1).seen is not ours(1).seen                 # a fresh default_factory value each time
    assert ours(1) != ours(2) and ours(1, "a") != ours(1, "b")
    with pytest.raises(TypeError):
        ours()
    with pytest.raises(TypeError):
        ours(1, "a", (), [], "", "too many")
    with pytest.raises(TypeError):
        ours(1, nope=2)


def test_frozen_records_refuse_assignment_and_deletion():
    _, ours = _pair(frozen=True)
    p = ours(1)
    with pytest.raises(AttributeError):
        p.x = 2
    with pytest.raises(AttributeError):
        del p.x
    with pytest.raises(record.FrozenInstanceError):
        p.label = "q"
    _, mutable = _pair(frozen=False)
    m = mutable(1)
    m.x = 2
    assert m.x == 2


def test_post_init_replace_fields_and_pickle():
    @record.dataclass(frozen=True)
    class Box:
        items: tuple
        count: int = 0

        def __post_init__(self):
            object.__setattr__(self, "count", len(self.items))
    b = Box((1, 2))
    assert b.count == 2
    assert record.replace(b, items=(1,)).count == 1
    assert dataclasses.replace(b, items=(1, 2, 3)).count == 3  # i18n.py and tests use the standard replace
    assert [f.name for f in record.fields(Box)] == ["items", "count"]
    with pytest.raises(TypeError):
        record.fields(object())


def test_declaration_errors_as_dataclasses():
    with pytest.raises(ValueError):
        @record.dataclass
        class Bad:
            items: list = []
    with pytest.raises(TypeError):
        @record.dataclass
        class Order:
            a: int = 0
            b: int
    with pytest.raises(ValueError):
        record.field(default=1, default_factory=int)


def test_the_real_records_hash_and_compare_as_before():
    """What the engine and caches rely on: equal records hash alike, a tuple of the compared fields."""
    s = Signature("out of memory", 0.9, False, line=3)
    assert s == Signature("out of memory", 0.9, False, line=99)      # `line` is compare=False
    assert hash(s) == hash(("out of memory", 0.9, False, False))   # pattern, weight, case, next_line
    assert Evidence(3, "x") == Evidence(3, "x") and hash(Evidence(3, "x")) == hash((3, "x"))
    e = Entry(id="a", path="a.yaml", signatures=(s,), title=Text.of("T"))
    assert dataclasses.replace(e, id="b").id == "b" and record.replace(e, id="b") == Entry(**{**{
        f.name: getattr(e, f.name) for f in record.fields(Entry)}, "id": "b"})
    assert pickle.loads(pickle.dumps(e)) == e and pickle.loads(pickle.dumps(s)).line == 3
    f = Finding(entry=e, confidence=0.9, evidence=(Evidence(1, "x"),))
    assert "entry=" not in repr(f) and "confidence=0.9" in repr(f)        # field(repr=False)
    with pytest.raises(AttributeError):
        f.confidence = 1.0


def test_a_diagnosis_does_not_import_dataclasses(tmp_path):
    """The point of record.py: the warm path never loads dataclasses (and inspect with it)."""
    log = tmp_path / "job.log"
    log.write_text("step 1\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    code = ("import sys; from gpu_troubleshooter import cli\n"
            "from gpu_troubleshooter.engine import diagnose_path\n"
            "from gpu_troubleshooter.knowledge import load_knowledge_base\n"
            f"kb = load_knowledge_base(); d = diagnose_path({str(log)!r}, kb); d.to_dict()\n"  # warm: cached KB
            f"kb = load_knowledge_base(); d = diagnose_path({str(log)!r}, kb); d.to_dict()\n"
            "print(d.findings[0].id, 'dataclasses' in sys.modules, 'inspect' in sys.modules)")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env_code = "import gpu_troubleshooter.knowledge as k; k.load_knowledge_base()"
    subprocess.run([sys.executable, "-c", env_code], check=True, env=env)  # fill the cache first
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env).stdout.split()
    assert out[0] == "cuda-oom" and out[1:] == ["False", "False"]


@pytest.mark.parametrize("columns", [None, "", "0", "abc", "40", "132"])
def test_terminal_columns_and_help_as_shutil_and_argparse_give_them(monkeypatch, columns):
    """The start-up-cheap terminal width (no shutil import) is shutil's, and `--help` is argparse's own."""
    import argparse
    import shutil

    from gpu_troubleshooter.cli import diagnose_parser
    from gpu_troubleshooter.text import terminal_columns
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns
    assert terminal_columns(100) == shutil.get_terminal_size((100, 24)).columns
    ours = diagnose_parser()
    stock = diagnose_parser()
    stock.formatter_class = argparse.HelpFormatter
    assert ours.format_help() == stock.format_help() and ours.format_usage() == stock.format_usage()


def test_a_diagnosis_does_not_import_shutil(tmp_path):
    """shutil loads bz2, lzma and fnmatch; argparse and the renderer used to import it for the terminal width."""
    log = tmp_path / "job.log"
    log.write_text("step 1\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    code = ("import sys; from gpu_troubleshooter import cli\n"
            f"sys.argv = ['troubleshoot', {str(log)!r}]\n"
            "import io, contextlib\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    status = cli.main()\n"
            "print(status, 'shutil' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    assert out == ["1", "False"]
