"""The on-disk cache: the parsed knowledge base and the compiled scanner database.

An explicit object, not module state, so tests and the web service can hold
their own. It is only ever an accelerator: every failure to read or write it
costs start-up time, never a wrong answer or a traceback.

- Location: $XDG_CACHE_HOME/gpu-troubleshooter, else ~/.cache/gpu-troubleshooter.
  A HOME that does not exist (or "~" that cannot be expanded) means no cache:
  we never create a home directory or a literal `./~` folder.
- Keys are content hashes chosen by the caller (no "-" in them); files are
  `<kind>-<key>.<ext>`, so kinds such as "hs" and "hs-all" never share files.
- Writes are atomic (a temporary file renamed into place), and at most
  KEEP_PER_KIND files of one kind are kept: HPC homes have file-count quotas.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional, TypeVar

__all__ = ["Cache", "default_cache", "KEEP_PER_KIND"]

KEEP_PER_KIND = 3
APP = "gpu-troubleshooter"
T = TypeVar("T")

try:  # the C unpickler alone: pickle.py costs more start-up time than reading the cache (it is imported to write)
    from _pickle import loads as _loads
except ImportError:  # pragma: no cover - a Python without the C accelerator
    from pickle import loads as _loads


def _base_dir() -> Optional[Path]:
    """The user's cache folder, or None where there is no sensible one."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        base = Path(xdg)
        return base if base.is_dir() or base.parent.is_dir() else None
    home = os.path.expanduser("~")
    if not os.path.isabs(home) or not os.path.isdir(home):
        return None
    return Path(home) / ".cache"


class Cache:
    """Files in one folder; `root` None is a cache that stores nothing."""

    def __init__(self, root: Optional[Path]):
        self.root = root

    def _file(self, kind: str, key: str, ext: str) -> Optional[Path]:
        return None if self.root is None else self.root / f"{kind}-{key}.{ext}"

    def load_bytes(self, kind: str, key: str, ext: str = "bin", touch: bool = True) -> Optional[bytes]:
        """The file's contents, or None; `touch` marks it as used (pruning keeps the most recently used)."""
        path = self._file(kind, key, ext)
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except OSError:
            return None
        if touch:
            try:  # most recently used is kept longest
                os.utime(path)
            except OSError:
                pass
        return data

    def store_bytes(self, kind: str, key: str, data: bytes, ext: str = "bin") -> bool:
        """Write atomically and prune; False when it could not be written."""
        path = self._file(kind, key, ext)
        if path is None:
            return False
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except OSError:
            try:
                tmp.unlink()
            except OSError:
                pass
            return False
        self.prune(kind, ext, keep=path)
        return True

    def _files(self, kind: str, ext: str) -> list[Path]:
        """The files of exactly this kind: the glob "hs-*.db" also matches "hs-all-<key>.db",
        whose key part would hold a "-"."""
        assert self.root is not None
        head, tail = len(kind) + 1, len(ext) + 1
        return [p for p in self.root.glob(f"{kind}-*.{ext}") if "-" not in p.name[head:-tail]]

    def prune(self, kind: str, ext: str, keep: Optional[Path] = None) -> None:
        """Keep the KEEP_PER_KIND most recently used files of a kind."""
        if self.root is None:
            return
        try:
            files = [p for p in self._files(kind, ext) if p != keep]
            files.sort(key=lambda p: p.stat().st_mtime, reverse=True)
        except OSError:
            return
        for old in files[KEEP_PER_KIND - 1:]:
            try:
                old.unlink()
            except OSError:
                pass

    def discard(self, kind: str, key: str, ext: str = "bin") -> None:
        """Remove one file (found damaged after it was loaded); a failure is ignored."""
        path = self._file(kind, key, ext)
        if path is not None:
            try:
                path.unlink()
            except OSError:
                pass

    def keys(self, kind: str, ext: str = "bin") -> list[str]:
        """The keys held for a kind, most recently used first."""
        if self.root is None:
            return []
        try:
            files = sorted(self._files(kind, ext), key=lambda p: p.stat().st_mtime, reverse=True)
        except OSError:
            return []
        return [p.name[len(kind) + 1:-len(ext) - 1] for p in files]

    def load_object(self, kind: str, key: str, valid: Callable[[Any], bool], touch: bool = True) -> Optional[Any]:
        """An object stored by store_object, if it unpickles and `valid(obj)` holds."""
        data = self.load_bytes(kind, key, "pickle", touch)
        if data is None:
            return None
        try:
            obj = _loads(data)
        except Exception:  # a damaged or foreign cache file can raise anything; it is rebuilt
            return None
        try:
            return obj if valid(obj) else None
        except Exception:  # a check that trips on a wrong-typed object means "not valid"
            return None

    def store_object(self, kind: str, key: str, obj: Any) -> bool:
        if self.root is None:
            return False
        import pickle
        try:
            data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError):
            return False
        return self.store_bytes(kind, key, data, "pickle")


def default_cache() -> Cache:
    """The user's cache, read from the environment each time (tests change it)."""
    base = _base_dir()
    return Cache(base / APP if base is not None else None)
