"""Load the knowledge base: one YAML file per known failure.

The bundled entries ship inside the package; a site adds or overrides entries
with folders of its own (`--kb DIR`, or $TROUBLESHOOT_KB, colon-separated).
An entry in a later folder with the same id replaces the earlier one.
"""
import hashlib
import os
import pickle
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import yaml

from .errors import KnowledgeBaseError
from .schema import NodeLines, Problem, check_entry

try:  # the C loader is several times faster; start-up time matters
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Loader = yaml.SafeLoader

SITE_FILE = "_site.yaml"


@dataclass(frozen=True)
class Signature:
    pattern: str          # a regex; literals are escaped on load
    weight: float
    case_sensitive: bool


@dataclass(frozen=True)
class Entry:
    id: str
    path: str
    data: dict = field(repr=False, compare=False)
    signatures: tuple = ()
    exclude: tuple = ()
    phrases: tuple = ()
    values: tuple = ()    # (name, regex) pairs
    leads_to: tuple = ()
    fact_rules: tuple = ()

    @property
    def title(self):
        return self.data["title"]

    @property
    def area(self):
        return Path(self.path).parent.name

    def examples(self, kind):
        """Example logs beside the entry: kind is 'must-match' or 'must-not-match'."""
        folder = Path(self.path).with_suffix("") / kind
        return sorted(folder.glob("*.log")) + sorted(folder.glob("*.log.gz")) if folder.is_dir() else []


@dataclass(frozen=True)
class KnowledgeBase:
    entries: tuple
    site: dict
    folders: tuple
    problems: tuple = ()  # broken entries that were skipped (strict=False)

    def get(self, entry_id) -> Optional[Entry]:
        return next((e for e in self.entries if e.id == entry_id), None)


def bundled_dir() -> Path:
    from importlib.resources import files
    return Path(str(files("gpu_troubleshooter.knowledge_data")))


def kb_folders(extra_dirs=(), bundled=True):
    """Bundled entries first (unless $TROUBLESHOOT_BUNDLED_KB=0), then
    $TROUBLESHOOT_KB folders, then --kb folders: later ones override."""
    env = [p for p in os.environ.get("TROUBLESHOOT_KB", "").split(os.pathsep) if p]
    bundled = bundled and os.environ.get("TROUBLESHOOT_BUNDLED_KB", "1") != "0"
    return [bundled_dir()] * bundled + [*map(Path, env), *map(Path, extra_dirs)]


def entry_files(folder: Path):
    return sorted(p for p in folder.rglob("*.yaml") if p.name != SITE_FILE and not p.name.startswith("."))


def parse_entry(path: Path):
    """(Entry or None, problems) for one file; never raises for bad content."""
    text = path.read_text(encoding="utf-8")
    try:
        node = yaml.compose(text, Loader=_Loader)
        data = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        line = mark.line + 1 if mark else 1
        return None, [Problem(str(path), line, f"YAML syntax error: {getattr(e, 'problem', None) or e}")]
    problems = check_entry(data, NodeLines(node), str(path), path.stem)
    if problems:
        return None, problems
    return _entry(data, path), []


def _pattern(item):
    return item["regex"] if "regex" in item else re.escape(item["literal"])


def _entry(data, path):
    return Entry(
        id=data["id"],
        path=str(path),
        data=data,
        signatures=tuple(Signature(_pattern(s), float(s["weight"]), bool(s.get("case", False))) for s in data["signatures"]),
        exclude=tuple(Signature(_pattern(s), 1.0, bool(s.get("case", False))) if isinstance(s, dict) else Signature(s, 1.0, False)
                      for s in data.get("exclude", [])),
        phrases=tuple(data.get("phrases", [])),
        values=tuple(data.get("values", {}).items()),
        leads_to=tuple(data.get("leads_to", [])),
        fact_rules=tuple(data.get("facts", [])),
    )


def load_site(folders):
    site = {}
    for folder in folders:
        f = Path(folder) / SITE_FILE
        if f.is_file():
            doc = yaml.load(f.read_text(encoding="utf-8"), Loader=_Loader) or {}
            site.update((doc.get("placeholders") or {}))
    return site


def collect(extra_dirs=(), bundled=True):
    """(entries by id, problems) over all folders; later folders override.

    Parsing YAML is most of the CLI's start-up time, so the result is cached
    keyed by every entry file's path, size and mtime (and this code's own)."""
    folders = kb_folders(extra_dirs, bundled)
    files = [p for f in folders if f.is_dir() for p in entry_files(f)]
    code = [Path(__file__), Path(__file__).with_name("schema.py")]
    stamp = repr([(str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files + code] + [str(f) for f in folders])
    cached = _cache_path(stamp)
    try:
        with open(cached, "rb") as fh:
            return pickle.load(fh)
    except (OSError, pickle.PickleError, EOFError, AttributeError, ImportError):
        pass
    result = _collect(folders)
    try:  # an unwritable cache only costs start-up time
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            pickle.dump(result, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, cached)
    except OSError:
        pass
    return result


def _cache_path(stamp):
    from .scanner import cache_dir
    return cache_dir() / f"kb-{hashlib.sha256(stamp.encode()).hexdigest()[:24]}.pickle"


def _collect(folders):
    by_id, problems = {}, []
    for folder in folders:
        if not folder.is_dir():
            problems.append(Problem(str(folder), 0, "knowledge-base folder does not exist"))
            continue
        local = {}
        for path in entry_files(folder):
            entry, found = parse_entry(path)
            problems += found
            if entry is None:
                continue
            if entry.id in local:
                problems.append(Problem(str(path), 1, f"duplicate id '{entry.id}' (also {local[entry.id]})"))
                continue
            local[entry.id] = str(path)
            by_id[entry.id] = entry
    for entry in by_id.values():
        for target in entry.leads_to:
            if target not in by_id:
                problems.append(Problem(entry.path, _line_of(entry.path, target), f"leads_to names unknown entry '{target}'"))
    return by_id, problems


def _line_of(path, needle):
    with open(path, encoding="utf-8") as f:
        return next((n for n, line in enumerate(f, 1) if needle in line and not line.lstrip().startswith("id:")), 1)


def load_knowledge_base(extra_dirs=(), strict=False, bundled=True) -> KnowledgeBase:
    """The merged knowledge base. A broken entry is skipped (a dangling
    `leads_to` is only reported) and listed in
    `problems` (file and line) so one bad site entry cannot stop a diagnosis;
    with strict=True it raises KnowledgeBaseError instead."""
    by_id, problems = collect(extra_dirs, bundled)
    if problems and strict:
        raise KnowledgeBaseError(problems)
    folders = tuple(str(f) for f in kb_folders(extra_dirs, bundled))
    entries = tuple(sorted(by_id.values(), key=lambda e: e.id))
    return KnowledgeBase(entries=entries, site=load_site(folders), folders=folders, problems=tuple(problems))
