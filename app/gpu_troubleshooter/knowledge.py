"""Load the knowledge base: one YAML file per known failure, into typed records.

The bundled entries ship inside the package; a site adds or overrides entries
with folders of its own (`--kb DIR`, or $TROUBLESHOOT_KB, colon-separated).
An entry in a later folder with the same id replaces the earlier one.

Each file is parsed and validated once (schema.py) into a frozen model.Entry.
A broken file (bad YAML, not UTF-8, an unknown key, a pattern RE2 or the
scanner cannot run, a duplicate id) becomes a FILE:LINE Problem and is
skipped, so one bad site entry never stops a diagnosis. The parsed result is
cached (cache.py) keyed on the contents of every file and of this code.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional, Union

from .cache import Cache, default_cache
from .errors import KnowledgeBaseError
from .model import Entry, entry_from_yaml
from .schema import NodeLines, Problem, check_entry, scanner_problem

SITE_FILE = "_site.yaml"
NOT_ENTRIES = {"i18n", "must-match", "must-not-match"}  # folders beside entries that hold no entries
_CODE = ("knowledge.py", "model.py", "schema.py")


@dataclass(frozen=True)
class KnowledgeBase:
    entries: tuple[Entry, ...]
    site: dict[str, Any]
    folders: tuple[str, ...]
    problems: tuple[Problem, ...] = ()  # broken entries that were skipped (strict=False)
    drafts: tuple[Entry, ...] = ()      # `draft: true`: validated, never used for diagnosis
    _by_id: dict[str, Entry] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {e.id: e for e in self.entries})

    def get(self, entry_id: str) -> Optional[Entry]:
        return self._by_id.get(entry_id)


def bundled_dir() -> Path:
    # the package's own folder (importlib.resources costs more start-up time than the whole warm diagnosis)
    from . import knowledge_data
    return Path(knowledge_data.__file__).parent


def kb_folders(extra_dirs: Iterable[Union[str, Path]] = (), bundled: bool = True) -> list[Path]:
    """Bundled entries first (unless $TROUBLESHOOT_BUNDLED_KB=0), then
    $TROUBLESHOOT_KB folders, then --kb folders: later ones override."""
    env = [p for p in os.environ.get("TROUBLESHOOT_KB", "").split(os.pathsep) if p]
    bundled = bundled and os.environ.get("TROUBLESHOOT_BUNDLED_KB", "1") != "0"
    return [bundled_dir()] * bundled + [*map(Path, env), *map(Path, extra_dirs)]


def entry_files(folder: Path) -> list[Path]:
    """The entry files of a folder: not `_site.yaml`, not hidden, and nothing
    inside an entry's own folder (`<id>/i18n/*.yaml`, example folders)."""
    found = [p for p in folder.rglob("*.yaml")
             if p.name != SITE_FILE and not any(part.startswith(".") for part in p.relative_to(folder).parts)]
    own_folders = {p.with_suffix("") for p in found}

    def inside_an_entry(path: Path) -> bool:
        for d in path.parents:
            if d == folder:
                return False
            if d in own_folders or d.name in NOT_ENTRIES:
                return True
        return False

    return sorted(p for p in found if not inside_an_entry(p))


def read_yaml(path: Path) -> tuple[Any, Optional[NodeLines], list[Problem]]:
    """(document, its line map, problems) for one YAML file; never raises for bad content."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        return None, None, [Problem(str(path), 0, f"cannot be read: {e.strerror or e}")]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        return None, None, [Problem(str(path), line, f"not UTF-8 text (byte 0x{raw[e.start]:02x}); "
                                                       "save the file as UTF-8, e.g. iconv -f latin1 -t utf-8")]
    import yaml  # only when something must be parsed: a warm start reads the cache alone
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader is several times faster
    parser = loader(text)
    try:  # one parse gives both the line map and the document
        node = parser.get_single_node()
        data = parser.construct_document(node) if node is not None else None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        line = mark.line + 1 if mark else 1
        return None, None, [Problem(str(path), line, f"YAML syntax error: {getattr(e, 'problem', None) or e}")]
    finally:
        parser.dispose()
    return data, NodeLines(node), []


def parse_entry(path: Path, trusted: bool = False) -> tuple[Optional[Entry], list[Problem]]:
    """(Entry or None, problems) for one file; never raises for bad content.

    trusted: a bundled entry, whose regexes `kb validate` compiled in RE2 and
    Hyperscan before release; the first run after an upgrade skips that work."""
    data, lines, problems = read_yaml(path)
    if problems or lines is None:
        return None, problems
    problems = check_entry(data, lines, str(path), path.stem, re2=not trusted)
    if problems:
        return None, problems
    return entry_from_yaml(data, str(path), lines.line), []


def load_site(folders: Iterable[Union[str, Path]]) -> tuple[dict[str, Any], list[Problem]]:
    """Site placeholders ({site.NAME} in fix texts); later folders override."""
    site: dict[str, Any] = {}
    problems = []
    for folder in folders:
        f = Path(folder) / SITE_FILE
        if not f.is_file():
            continue
        doc, lines, found = read_yaml(f)
        problems += found
        if found:
            continue
        placeholders = doc.get("placeholders") if isinstance(doc, dict) else None
        if doc is not None and not isinstance(placeholders, dict):
            line = lines.line("placeholders") if lines is not None and isinstance(doc, dict) else 1
            problems.append(Problem(str(f), line, "a site file holds `placeholders:` mapping names to values "
                                                  "(e.g. gpu_partition: gpu); ignored"))
            continue
        site.update({str(k): v for k, v in (placeholders or {}).items()
                     if isinstance(v, (str, int, float)) and not isinstance(v, bool)})
    return site, problems


def _content_key(folders: Sequence[Path], bundled: Optional[Path]) -> str:
    """A hash of every YAML file under the folders and of the loader's own code."""
    h = hashlib.sha256()
    here = Path(__file__).parent
    for name in _CODE:
        h.update((here / name).read_bytes())
    for folder in folders:
        h.update(f"\0folder {folder} {folder == bundled}\0".encode())
        for p in _yaml_files(folder):
            try:
                h.update(f"\0{p.relative_to(folder)}\0".encode())
                h.update(p.read_bytes())
            except OSError:
                h.update(b"\0unreadable\0")
    return h.hexdigest()[:32]


def _yaml_files(folder: Path) -> list[Path]:
    """Every YAML file under a folder, example-log folders skipped (they can be many)."""
    out = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in ("must-match", "must-not-match") and not d.startswith(".")]
        out += [Path(root, f) for f in files if f.endswith(".yaml")]
    return sorted(out)


_Parsed = tuple[dict[str, Entry], list[Problem], dict[str, Any]]
_MAGIC = "gpu-troubleshooter-kb"


def _valid_for(key: str) -> Any:
    """A check that a cached object is the parse of exactly these files, in the shape _collect returns."""
    def valid(obj: Any) -> bool:
        if not (isinstance(obj, tuple) and len(obj) == 5 and obj[0] == _MAGIC and obj[1] == key):
            return False
        _, _, by_id, problems, site = obj
        return (isinstance(by_id, dict) and all(isinstance(k, str) and isinstance(v, Entry) and v.id == k
                                                for k, v in by_id.items())
                and isinstance(problems, list) and all(isinstance(p, Problem) for p in problems)
                and isinstance(site, dict))
    return valid


def collect(extra_dirs: Iterable[Union[str, Path]] = (), bundled: bool = True,
            cache: Optional[Cache] = None, full: bool = False) -> tuple[dict[str, Entry], list[Problem]]:
    """(entries by id, problems) over all folders; later folders override.
    full=True also checks the bundled entries' regexes (what `kb validate` does)."""
    by_id, problems, _ = _collect_cached(kb_folders(extra_dirs, bundled), cache, full)
    return by_id, problems


def _collect_cached(folders: list[Path], cache: Optional[Cache], full: bool = False) -> _Parsed:
    """Parsing YAML is most of the CLI's start-up time, so the result is cached."""
    cache = default_cache() if cache is None else cache
    bundled = bundled_dir()
    if cache.root is None:
        return _collect(folders, bundled, full)
    key = _content_key(folders, bundled) + ("-full" if full else "")
    held = cache.load_object("kb", key, _valid_for(key))
    if held is not None:
        return held[2], held[3], held[4]
    result = _collect(folders, bundled, full)
    cache.store_object("kb", key, (_MAGIC, key, *result))
    return result


def _collect(folders: list[Path], bundled: Path, full: bool = False) -> _Parsed:
    by_id: dict[str, Entry] = {}
    problems: list[Problem] = []
    for folder in folders:
        if not folder.is_dir():
            problems.append(Problem(str(folder), 0, "knowledge-base folder does not exist"))
            continue
        local: dict[str, str] = {}
        fresh = []
        trusted = folder == bundled and not full
        for path in entry_files(folder):
            entry, found = parse_entry(path, trusted)
            problems += found
            if entry is None:
                continue
            if entry.id in local:
                problems.append(Problem(str(path), _line_of(path, "id:"),
                                        f"duplicate id '{entry.id}' (also {local[entry.id]}); this one is skipped"))
                continue
            local[entry.id] = str(path)
            fresh.append(entry)
        if not trusted:
            rejected = _scanner_rejects(fresh)
            problems += rejected.values()
            fresh = [e for e in fresh if e.id not in rejected]
        by_id.update((e.id, e) for e in fresh)
    for entry in by_id.values():
        for target in entry.leads_to:
            if target not in by_id:
                problems.append(Problem(entry.path, _line_of(Path(entry.path), target),
                                        f"leads_to names unknown entry '{target}'"))
        if entry.refines and entry.refines not in by_id:
            problems.append(Problem(entry.path, _line_of(Path(entry.path), "refines:"),
                                    f"refines names unknown entry '{entry.refines}'"))
    by_id = {i: replace(e, broader=_broader(e, by_id)) if e.refines else e for i, e in by_id.items()}
    site, site_problems = load_site(folders)
    return by_id, problems + site_problems, site


def _broader(entry: Entry, by_id: dict[str, Entry]) -> tuple[str, ...]:
    """The entries `entry` refines, nearest first (a cycle stops the walk)."""
    chain: list[str] = []
    at: Optional[str] = entry.refines
    while at and at in by_id and at != entry.id and at not in chain:
        chain.append(at)
        at = by_id[at].refines
    return tuple(chain)


def _scanner_rejects(entries: list[Entry]) -> dict[str, Problem]:
    """Entries with a signature the scanner cannot compile, by id (one problem each)."""
    patterns = [(s.pattern, s.case_sensitive) for e in entries for s in e.signatures]
    if not patterns or scanner_problem(patterns) is None:
        return {}
    out = {}
    for e in entries:
        for i, s in enumerate(e.signatures, 1):
            why = scanner_problem([(s.pattern, s.case_sensitive)])
            if why:
                out[e.id] = Problem(e.path, s.line, f"signatures[{i}] is rejected by the scanner: {why}; entry skipped")
                break
    return out


def _line_of(path: Path, needle: str) -> int:
    try:
        with open(path, encoding="utf-8") as f:
            return next((n for n, line in enumerate(f, 1) if needle in line and
                         (needle == "id:" or not line.lstrip().startswith("id:"))), 1)
    except (OSError, UnicodeDecodeError):
        return 1


def load_knowledge_base(extra_dirs: Iterable[Union[str, Path]] = (), strict: bool = False, bundled: bool = True,
                        cache: Optional[Cache] = None) -> KnowledgeBase:
    """The merged knowledge base. A broken entry is skipped (a dangling
    `leads_to` is only reported) and listed in
    `problems` (file and line) so one bad site entry cannot stop a diagnosis;
    with strict=True it raises KnowledgeBaseError instead."""
    folders = kb_folders(extra_dirs, bundled)
    by_id, problems, site = _collect_cached(folders, cache)
    if problems and strict:
        raise KnowledgeBaseError(problems)
    ordered = sorted(by_id.values(), key=lambda e: e.id)
    return KnowledgeBase(entries=tuple(e for e in ordered if not e.draft), site=site, folders=tuple(map(str, folders)),
                         problems=tuple(problems), drafts=tuple(e for e in ordered if e.draft))
