"""Where each example log comes from: `<entry folder>/sources.yaml`.

Example logs are real text copied verbatim from where someone posted it (only
trimmed and redacted), never written to fit a signature: an invented log makes
a test that cannot fail. This file names the source of each log so that anyone
can compare the copy with it, and `kb validate` checks that it covers the logs:

    must-match/torch25-expandable-segments.log:
      url: https://github.com/murong-xu/CADS/issues/4
    must-not-match/cluster-ticket.log:
      origin: our helpdesk ticket 4711 (not public; user names redacted)
      note: trimmed to the traceback
    must-match/old.log:
      untraced: kept for the minimum of 3; no public source found for its first line
"""
from dataclasses import dataclass
from pathlib import Path

from .knowledge import read_yaml
from .schema import Problem

SOURCES_FILE = "sources.yaml"
EXAMPLE_KINDS = ("must-match", "must-not-match")
_WHERE = ("url", "origin", "untraced")  # exactly one of them per log
_KEYS = frozenset(_WHERE) | {"note"}


@dataclass(frozen=True)
class Provenance:
    """One entry's sources.yaml as checked: no file at all, or how many logs it leaves untraced."""
    recorded: bool
    untraced: int = 0
    traced_matches: int = 0   # must-match logs with a url or an origin


def example_names(folder: Path) -> list[str]:
    """Each example log of an entry folder, as `must-match/NAME`."""
    return [f"{kind}/{p.name}" for kind in EXAMPLE_KINDS if (folder / kind).is_dir()
            for p in sorted((folder / kind).iterdir()) if p.is_file()]


def check_sources(entry_path: str) -> tuple[list[Problem], Provenance]:
    """Problems of an entry's sources.yaml (FILE:LINE), and what it records."""
    folder = Path(entry_path).with_suffix("")
    path = folder / SOURCES_FILE
    if not path.is_file():
        return [], Provenance(recorded=False)
    data, lines, problems = read_yaml(path)
    if problems:
        return problems, Provenance(recorded=True)
    if not isinstance(data, dict):
        return [Problem(str(path), 1, "must map each example log (e.g. must-match/x.log) to its url, origin or untraced")], \
            Provenance(recorded=True)
    out, untraced, traced_matches = [], 0, 0
    names = example_names(folder)
    for key, value in data.items():
        line = lines.line(key) if lines else 1
        if key not in names:
            out.append(Problem(str(path), line, f"'{key}' is not an example log of this entry (they are under {'/ and '.join(EXAMPLE_KINDS)}/)"))
            continue
        where = [k for k in _WHERE if isinstance(value, dict) and k in value]
        if not isinstance(value, dict) or len(where) != 1 or set(value) - _KEYS:
            out.append(Problem(str(path), line, f"'{key}' needs exactly one of {', '.join(_WHERE)} (and at most a note)"))
        elif not isinstance(value[where[0]], str) or not value[where[0]].strip():
            out.append(Problem(str(path), line, f"'{key}': {where[0]} must be text"))
        elif where[0] == "url" and not value["url"].startswith(("https://", "http://")):
            out.append(Problem(str(path), line, f"'{key}': url must be an http(s) address, not '{value['url']}'"))
        untraced += where == ["untraced"]
        traced_matches += key.startswith("must-match/") and where in (["url"], ["origin"])
    missing = [n for n in names if n not in data]
    if missing:
        out.append(Problem(str(path), 1, f"no source for {len(missing)} example log(s): {', '.join(missing[:5])}"
                                          + (" ..." if len(missing) > 5 else "")))
    return out, Provenance(recorded=True, untraced=untraced, traced_matches=traced_matches)
