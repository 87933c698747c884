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

import os
import re
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

from .cache import Cache, default_cache
from .errors import KnowledgeBaseError
from .model import Entry, Signature, Text
from .record import dataclass, field, fields, replace

try:  # the C unpickler alone (pickle.py is imported only to write the cache)
    from _pickle import loads as _loads
except ImportError:  # pragma: no cover - a Python without the C accelerator
    from pickle import loads as _loads
try:  # the built-in BLAKE2: hashlib would load OpenSSL, several ms of every start-up
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b

if TYPE_CHECKING:  # schema.py (the validator) is imported only when a file must be parsed or a problem shown
    from .schema import NodeLines, Problem

SITE_FILE = "_site.yaml"
NOT_ENTRIES = {"i18n", "must-match", "must-not-match"}  # folders beside entries that hold no entries
# The code whose change changes what a parse gives (the cache key covers it)
_CODE = ("knowledge.py", "model.py", "record.py", "schema.py", "facts.py", "cache.py")


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
    return [Path(p) for p in _entry_paths(str(Path(folder)))]


def _entry_paths(folder: str) -> list[str]:
    """entry_files as strings, in the same (path-part) order. Every run lists
    them for the cache key, so the walk never enters an entry's own folder or
    an example or i18n folder (a KB of 500 entries has thousands of files)."""
    out: list[str] = []

    def walk(d: str) -> None:
        try:
            with os.scandir(d) as it:
                items = list(it)
        except OSError:
            return
        names = {e.name for e in items}
        for e in items:
            n = e.name
            if n.startswith("."):
                continue
            if n.endswith(".yaml") and n != SITE_FILE:
                out.append(e.path)
            own = n + ".yaml" in names and n + ".yaml" != SITE_FILE  # <id>/ beside <id>.yaml
            if n not in NOT_ENTRIES and not own and e.is_dir(follow_symlinks=False):
                walk(e.path)

    walk(folder)
    out.sort(key=lambda p: p.split(os.sep))
    return out


def read_yaml(path: Path) -> tuple[Any, Optional[NodeLines], list[Problem]]:
    """(document, its line map, problems) for one YAML file; never raises for bad content."""
    from .schema import NodeLines, Problem
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

    trusted: a bundled entry, whose regexes `kb validate` checked and compiled in
    RE2 and Hyperscan before release; the first run after an upgrade skips that work."""
    from .model import entry_from_yaml
    from .schema import check_entry
    data, lines, problems = read_yaml(path)
    if problems or lines is None:
        return None, problems
    problems = check_entry(data, lines, str(path), path.stem, trusted=trusted)
    if problems:
        return None, problems
    return entry_from_yaml(data, str(path), lines.line), []


def load_site(folders: Iterable[Union[str, Path]]) -> tuple[dict[str, Any], list[Problem]]:
    """Site placeholders ({site.NAME} in fix texts); later folders override."""
    from .schema import Problem
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
                     if isinstance(v, (str, int, float)) and not isinstance(v, bool)
                     or k == "lang_fallbacks" and isinstance(v, dict)})  # {lang: [sibling, ...]} (i18n.py)
    return site, problems


# -- the cache: content key, compact format, lazily loaded texts ------------

FORMAT = 3                  # of the cached file below; part of the key
_MAGIC = "gpu-troubleshooter-kb"
# What a diagnosis reads of every entry is loaded with the cache; the texts a
# user reads (the bulk of it) only for the entries a finding is shown for.
_LAZY = ("title", "summary", "causes", "fixes", "references", "rules", "checked")
_EAGER = tuple(f.name for f in fields(Entry) if f.name not in _LAZY)
_TUPLES = ("signatures", "exclude", "phrases", "values", "leads_to", "fact_rules", "tags", "aliases", "broader")
_Row = tuple[str, int, str, bool]                     # a Problem as plain data
_File = tuple[str, str, bool, Optional[str], list[_Row]]  # path, digest, trusted, entry id, parse problems
_Parsed = tuple[dict[str, Entry], list["Problem"], dict[str, Any]]
_Memo = dict[tuple[str, bool, str], tuple[Optional[Entry], list["Problem"]]]


class _Deferred:
    """A field of a cached entry read from its stored texts on first use."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return getattr(Entry, self.name)
        d = obj.__dict__
        if self.name not in d:
            _materialise(obj)
        return d[self.name]

    def __set__(self, obj: Any, value: Any) -> None:  # the dataclass __init__ (dataclasses.replace) sets fields this way
        obj.__dict__[self.name] = value


class LazyEntry(Entry):
    """An Entry from the cache whose texts (title, summary, causes, fixes,
    references, rules, checked) are unpickled when first read. It behaves as
    an Entry: equal to the same Entry, a plain Entry when pickled or copied."""

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Entry):
            return all(getattr(self, f.name) == getattr(other, f.name) for f in fields(Entry) if f.compare)
        return NotImplemented

    __hash__ = Entry.__hash__

    def __repr__(self) -> str:
        return "Entry" + Entry.__repr__(self)[len("LazyEntry"):]

    def __reduce__(self) -> tuple[Any, ...]:
        return (_plain_entry, (tuple((f.name, getattr(self, f.name)) for f in fields(Entry)),))


for _name in _LAZY:
    setattr(LazyEntry, _name, _Deferred(_name))


def _plain_entry(items: tuple[tuple[str, Any], ...]) -> Entry:
    return Entry(**dict(items))


def _materialise(entry: Entry) -> None:
    d = entry.__dict__
    if all(name in d for name in _LAZY):  # another thread was first
        return
    blob, src = d.get("_blob"), d.get("_src")
    values: Any = None
    if blob is not None:
        try:
            values = _loads(blob)
            if not (type(values) is tuple and len(values) == len(_LAZY) and isinstance(values[0], Text)
                    and isinstance(values[1], Text) and all(type(v) is tuple for v in values[2:6])):
                values = None
        except Exception:  # a damaged cache file: the file itself says it, and the cache is rebuilt next time
            values = None
        if values is None and src is not None:
            src[0].discard("kb", src[1], "pickle")
    if values is None:
        values = _texts_from_file(entry)
    for name, value in zip(_LAZY, values):
        d.setdefault(name, value)
    d.pop("_blob", None)
    d.pop("_src", None)


def _texts_from_file(entry: Entry) -> tuple[Any, ...]:
    parsed, _ = parse_entry(Path(entry.path), trusted=True)
    if parsed is not None and parsed.id == entry.id:
        return tuple(getattr(parsed, name) for name in _LAZY)
    return (Text.of(entry.id), Text.of(""), (), (), (), (), None)


def _read(path: str) -> Union[bytes, str]:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "unreadable"
    try:  # os-level: for hundreds of small files the io layer costs more than the reading
        parts = [os.read(fd, 1 << 16)]
        while parts[-1]:
            parts.append(os.read(fd, 1 << 16))
        return b"".join(parts)
    except OSError:
        return "unreadable"
    finally:
        os.close(fd)


def _key_files(folders: Sequence[Path], bundled: Optional[Path]) -> list[tuple[str, str]]:
    """(label, path) of every file the parsed knowledge base depends on, in a fixed order."""
    out = []
    for folder in folders:
        root = str(folder)
        out.append((f"folder {root} {folder == bundled} {os.path.isdir(root)}", ""))
        out += [("", path) for path in (*_entry_paths(root), os.path.join(root, SITE_FILE))]
    return out


def _version() -> str:
    """The cache format and a digest of the loader's code: a file written by
    other code is never used, not even for the entries of unchanged files."""
    if _VERSION:
        return _VERSION[0]
    h = blake2b(digest_size=8)
    here = os.path.dirname(os.path.abspath(__file__))
    for name in _CODE:
        data = _read(os.path.join(here, name))
        h.update(data if isinstance(data, bytes) else data.encode())
    _VERSION.append(f"{FORMAT}-{h.hexdigest()}")
    return _VERSION[0]


_VERSION: list[str] = []  # _version(), read once per process


def _fingerprint(folders: Sequence[Path], bundled: Optional[Path], full: bool) -> str:
    """The cache key: the contents of every entry file and site file under the
    folders, and of the loader's own code. Translations and example logs are
    not read: the cached result holds none of them."""
    h = blake2b(digest_size=16)
    h.update(f"{_version()} {full}".encode())
    for label, path in _key_files(folders, bundled):
        data = _read(path) if path else b""
        h.update(f"\0{label}{path}\0{len(data)}\0".encode())
        h.update(data if isinstance(data, bytes) else data.encode())
    return h.hexdigest()


_KEY = re.compile(rb"[0-9a-f]{32}")
_SETTLE_NS = 3_000_000_000  # a file changed this recently may change again within its timestamp's granularity


def _stat_key(folders: Sequence[Path], bundled: Optional[Path], full: bool) -> tuple[str, bool]:
    """A cheap stand-in for _fingerprint, and whether it may be remembered.

    Reading and hashing every entry file is a tenth of a warm run, so the cache
    also remembers which contents key went with the files' (inode, size, mtime,
    ctime). A run whose files all stat the same uses that key without reading
    them; any change (ctime cannot be set back, even by `touch -r`) reads the
    contents again, so the cache stays keyed on contents. As with git's index, a
    key is not remembered while a file is younger than a few seconds: it could
    still change within the same timestamp. Caveat: an NFS client may cache a
    file's attributes for up to a minute (actimeo), so an entry edited from
    another node can take that long to be noticed here.
    """
    h = blake2b(digest_size=16)
    h.update(f"{_version()} {full}".encode())
    newest = 0
    for label, path in _key_files(folders, bundled):
        try:
            st = os.stat(path) if path else None
        except OSError as e:
            h.update(f"\0{label}{path}\0{type(e).__name__}".encode())
            continue
        if st is not None:
            newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
            h.update(f"\0{label}{path}\0{st.st_ino} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns}".encode())
        else:
            h.update(f"\0{label}".encode())
    return h.hexdigest(), time.time_ns() - newest > _SETTLE_NS


def _digests(folders: Sequence[Path], bundled: Optional[Path]) -> dict[str, str]:
    """A digest of each file by path (after a change: which files are still the same)."""
    out = {}
    for _, path in _key_files(folders, bundled):
        if path:
            data = _read(path)
            out[path] = blake2b(data, digest_size=16).hexdigest() if isinstance(data, bytes) else data
    return out


def _rows(problems: Iterable[Problem]) -> list[_Row]:
    return [(p.file, p.line, p.message, p.warning) for p in problems]


def _problems(rows: list[_Row]) -> list[Problem]:
    if not rows:
        return []
    from .schema import Problem
    return [Problem(*row) for row in rows]


def _dumps(key: str, by_id: dict[str, Entry], problems: list[Problem], site: dict[str, Any], files: list[_File]) -> bytes:
    """The cached file: each entry a LazyEntry holding what a diagnosis reads and its texts as one pickle."""
    import pickle
    held = []
    for e in by_id.values():
        lazy = object.__new__(LazyEntry)
        lazy.__dict__.update({name: getattr(e, name) for name in _EAGER})
        lazy.__dict__["_blob"] = pickle.dumps(tuple(getattr(e, name) for name in _LAZY), protocol=pickle.HIGHEST_PROTOCOL)
        held.append(lazy)
    return _pickled((_MAGIC, _version(), key, held, _rows(problems), site, files))


def _pickled(obj: Any) -> bytes:
    """Pickled with each LazyEntry as it is, not as a plain Entry (LazyEntry.__reduce__): unpickling then builds them in C."""
    import copyreg
    import io
    import pickle
    out = io.BytesIO()
    pickler = pickle.Pickler(out, protocol=pickle.HIGHEST_PROTOCOL)
    newobj: Any = vars(copyreg)["__newobj__"]  # untyped in typeshed
    pickler.dispatch_table = {LazyEntry: lambda e: (newobj, (LazyEntry,), e.__dict__)}
    pickler.dump(obj)
    return out.getvalue()


_STATE = frozenset((*_EAGER, "_blob"))


def _unpack(obj: Any, key: Optional[str], src: Optional[tuple[Cache, str]]) -> Optional[tuple[dict[str, Entry], list[_Row], dict[str, Any], list[_File]]]:
    """The entries of a cached file, or None unless it is exactly the shape
    _dumps writes (for `key`, unless None): a damaged file is rebuilt, never trusted."""
    if not (type(obj) is tuple and len(obj) == 7 and obj[0] == _MAGIC and obj[1] == _version() and (key is None or obj[2] == key)):
        return None
    held, rows, site, files = obj[3:]
    if not (type(held) is list and type(rows) is list and type(site) is dict and type(files) is list):
        return None
    if not all(type(r) is tuple and len(r) == 4 and type(r[0]) is str and type(r[1]) is int and type(r[2]) is str
               for r in rows):
        return None
    if any(type(e) is not LazyEntry for e in held):
        return None
    states = [e.__dict__ for e in held]
    if not (all(d.keys() == _STATE for d in states)
            and {type(d[name]) for d in states for name in ("id", "path")} <= {str}
            and {type(d["_blob"]) for d in states} <= {bytes}
            and {type(d[name]) for d in states for name in _TUPLES} <= {tuple}
            and {type(s) for d in states for s in d["signatures"] + d["exclude"]} <= {Signature}):
        return None
    for d in states:
        d["_src"] = src
    return {e.id: e for e in held}, rows, site, files
def collect(extra_dirs: Iterable[Union[str, Path]] = (), bundled: bool = True,
            cache: Optional[Cache] = None, full: bool = False) -> tuple[dict[str, Entry], list[Problem]]:
    """(entries by id, problems) over all folders; later folders override.
    full=True also checks the bundled entries' regexes (what `kb validate` does)."""
    by_id, problems, _ = _collect_cached(kb_folders(extra_dirs, bundled), cache, full)
    return by_id, problems


def _collect_cached(folders: list[Path], cache: Optional[Cache], full: bool = False) -> _Parsed:
    """Parsing YAML is most of the CLI's start-up time, so the result is cached:
    one file per knowledge base, keyed on the contents of its files. After a
    change, the entries of unchanged files are taken from the previous cached
    files rather than parsed again."""
    cache = default_cache() if cache is None else cache
    bundled = bundled_dir()
    if cache.root is None:
        by_id, problems, site, _ = _collect(folders, bundled, full)
        return by_id, problems, site
    stat_key, settled = _stat_key(folders, bundled, full)
    known = cache.load_bytes("kbstat", stat_key, "txt")
    key = known.decode("ascii", "replace") if known and _KEY.fullmatch(known) else _fingerprint(folders, bundled, full)
    held = _unpack(cache.load_object("kb", key, lambda obj: True), key, (cache, key))
    if held is not None:
        by_id, problems, site = held[0], _problems(held[1]), held[2]
    else:
        digests = _digests(folders, bundled)
        by_id, problems, site, files = _collect(folders, bundled, full, digests, _memo(cache, digests))
        cache.store_bytes("kb", key, _dumps(key, by_id, problems, site, files), "pickle")
    if settled and not known:
        cache.store_bytes("kbstat", stat_key, key.encode("ascii"), "txt")
    return by_id, problems, site


def _memo(cache: Cache, digests: dict[str, str]) -> _Memo:
    """What earlier cached knowledge bases parsed each file into, by (path, trusted, digest), for the files still there."""
    memo: _Memo = {}
    for old in cache.keys("kb", "pickle")[:3]:
        held = _unpack(cache.load_object("kb", old, lambda obj: True, touch=False), None, None)
        if held is None:
            continue
        by_id, _, _, files = held
        for row in files:
            if not (type(row) is tuple and len(row) == 5):
                break
            path, digest, trusted, entry_id, rows = row
            if digests.get(path) != digest or digest in ("missing", "unreadable"):
                continue
            entry = by_id.get(entry_id) if isinstance(entry_id, str) else None
            if entry_id is not None and (entry is None or entry.path != path):
                continue  # not kept there (a duplicate, or rejected by the scanner): parsed again
            if entry is not None:
                _materialise(entry)
                entry = replace(entry, broader=())
            memo[(path, bool(trusted), digest)] = (entry, _problems(rows))
    return memo


def _collect(folders: list[Path], bundled: Path, full: bool = False, digests: Optional[dict[str, str]] = None,
             memo: Optional[_Memo] = None) -> tuple[dict[str, Entry], list[Problem], dict[str, Any], list[_File]]:
    from .schema import Problem
    by_id: dict[str, Entry] = {}
    shadowed: dict[str, list[Entry]] = {}   # entries of earlier folders that a later one replaced
    folder_of: dict[str, int] = {}          # entry path -> folder index
    untrusted: set[str] = set()             # paths of entries whose regexes the scanner must still accept
    per_folder: list[list[Problem]] = []
    files: list[_File] = []
    for fi, folder in enumerate(folders):
        problems: list[Problem] = []
        per_folder.append(problems)
        if not folder.is_dir():
            problems.append(Problem(str(folder), 0, "knowledge-base folder does not exist"))
            continue
        local: dict[str, str] = {}
        trusted = folder == bundled and not full
        for path in entry_files(folder):
            name = str(path)
            digest = (digests or {}).get(name, "")
            held = (memo or {}).get((name, trusted, digest)) if digest else None
            entry, found = held if held is not None else parse_entry(path, trusted)
            files.append((name, digest, trusted, entry.id if entry is not None else None, _rows(found)))
            problems += found
            if entry is None:
                continue
            if entry.id in local:
                problems.append(Problem(name, _line_of(path, "id:"),
                                        f"duplicate id '{entry.id}' (also {local[entry.id]}); this one is skipped"))
                continue
            local[entry.id] = name
            folder_of[name] = fi
            if not trusted:
                untrusted.add(name)
            if entry.id in by_id:
                shadowed.setdefault(entry.id, []).append(by_id[entry.id])
            by_id[entry.id] = entry
    for entry, problem in _scanner_rejects(by_id, shadowed, untrusted):
        per_folder[folder_of[entry.path]].append(problem)
    problems = [p for found in per_folder for p in found]
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
    return by_id, problems + site_problems, site, files


def _broader(entry: Entry, by_id: dict[str, Entry]) -> tuple[str, ...]:
    """The entries `entry` refines, nearest first (a cycle stops the walk)."""
    chain: list[str] = []
    at: Optional[str] = entry.refines
    while at and at in by_id and at != entry.id and at not in chain:
        chain.append(at)
        at = by_id[at].refines
    return tuple(chain)


def _scanner_rejects(by_id: dict[str, Entry], shadowed: dict[str, list[Entry]],
                     untrusted: set[str]) -> list[tuple[Entry, Problem]]:
    """Site entries with a signature the scanner cannot compile (one problem
    each, in file order); they leave `by_id`, and an entry of an earlier folder
    with the same id takes the place again.

    The check is the scanner's own compile of the whole knowledge base, the
    one the diagnosis needs next (scanner.py caches it by its patterns), not a
    compile of its own: on a knowledge-base change Hyperscan compiles once.
    Drafts and replaced entries, which that compile leaves out, are compiled
    on their own (there are few)."""
    if not untrusted:
        return []
    try:
        import hyperscan  # noqa: F401  # without it the RE2 fallback runs them; schema.py checked RE2
    except ImportError:
        return []
    def drop(entry: Entry) -> None:
        earlier = shadowed.get(entry.id)
        if earlier and any(e is entry for e in earlier):
            earlier[:] = [e for e in earlier if e is not entry]
        elif by_id.get(entry.id) is entry:
            if earlier:
                by_id[entry.id] = earlier.pop()
            else:
                del by_id[entry.id]

    aside = [e for e in by_id.values() if e.draft and e.path in untrusted]
    aside += [e for earlier in shadowed.values() for e in earlier if e.path in untrusted]
    out = _rejected_alone(aside)
    for entry, _ in out:
        drop(entry)
    for _ in range(len(by_id) + 1):
        live = sorted((e for e in by_id.values() if not e.draft), key=lambda e: e.id)
        dropped = _scanner_drops(live, untrusted)
        if not dropped:
            break
        for entry, problem in dropped:
            out.append((entry, problem))
            drop(entry)
    order = {path: n for n, path in enumerate(sorted(untrusted, key=lambda p: p.split(os.sep)))}
    return sorted(out, key=lambda ep: order.get(ep[0].path, -1))


def _scanner_drops(live: list[Entry], untrusted: set[str]) -> list[tuple[Entry, Problem]]:
    """The entries the engine's scanner leaves out of this knowledge base."""
    if not any(e.path in untrusted for e in live):
        return []
    from . import engine
    build: Any = engine.CompiledKnowledgeBase  # untyped (engine.py is not strict)
    try:
        compiled = build(KnowledgeBase(entries=tuple(live), site={}, folders=()))
    except Exception:  # the scanner failed with no one entry to blame: check the site entries alone
        return _rejected_alone([e for e in live if e.path in untrusted])
    kept = {ce.entry.id for ce in compiled.entries}
    left_out = [e for e in live if e.id not in kept]
    found = _rejected_alone(left_out)
    named = {e.id for e, _ in found}
    return found + [(e, _reject(e, 1, "its signatures together")) for e in left_out if e.id not in named]


def _rejected_alone(entries: list[Entry]) -> list[tuple[Entry, Problem]]:
    """Of these entries, those with a signature the scanner rejects compiled on its own."""
    from .schema import scanner_problem
    patterns = [(s.pattern, s.case_sensitive) for e in entries for s in e.signatures]
    if not patterns or scanner_problem(patterns) is None:
        return []
    out = []
    for e in entries:
        for i, s in enumerate(e.signatures, 1):
            why = scanner_problem([(s.pattern, s.case_sensitive)])
            if why:
                out.append((e, _reject(e, i, why)))
                break
    return out


def _reject(e: Entry, i: int, why: str) -> Problem:
    from .schema import Problem
    line = e.signatures[i - 1].line if e.signatures else 1
    return Problem(e.path, line, f"signatures[{i}] is rejected by the scanner: {why}; entry skipped")


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
