"""The knowledge-base entry schema, checked field by field with file and line.

Problems are returned, never raised, so `kb validate` can list all of them.
docs/knowledge-schema.md is the human description of the same rules.
"""
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from .facts import SCHEDULER_NAMES

try:  # Python 3.11 moved the regex parser; the old names warn
    from re import _compiler as sre_compile, _constants as sre_constants, _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python < 3.11
    import sre_compile
    import sre_constants
    import sre_parse

ID_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
TOP_KEYS = {
    "id": True, "title": True, "summary": True, "tags": True, "severity": True,
    "signatures": True, "phrases": False, "exclude": False, "values": False,
    "causes": True, "fixes": True, "leads_to": False, "references": False, "facts": False,
    # Optional fields added after schema 1; an entry without them loads unchanged.
    "schema": False, "actor": False, "refines": False, "aliases": False, "checked": False, "draft": False,
}
SCHEMA_VERSIONS = {1, 2}  # model.SCHEMA_VERSION is the newest
ACTORS = {"user", "site"}
SCHEDULERS = SCHEDULER_NAMES  # facts.py holds the one list of batch systems
# harmless: lines that look like errors but are not (TensorFlow start-up noise); the engine
# lists them apart from the findings, never as a failure
SEVERITIES = {"error", "warning", "harmless"}
SIGNATURE_KEYS = {"regex", "literal", "weight", "case"}
EXCLUDE_KEYS = SIGNATURE_KEYS | {"next_line"}
FIX_KEYS = {"title", "text", "code", "when", "scheduler"}
CODE_LANGS = {"bash", "python", "sbatch", "text", "dockerfile", "yaml", "console", "pbs"}


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    message: str
    warning: bool = False   # reported, but the entry loads and `kb validate` still passes

    def __str__(self):
        return f"{self.file}:{self.line}: {'warning: ' if self.warning else ''}{self.message}"


class NodeLines:
    """Line numbers of a composed YAML document, looked up by key path."""

    def __init__(self, node: Any) -> None:
        self.node = node

    def line(self, *path: Any) -> int:
        node, best = self.node, self.node
        for key in path:
            child = None
            if node is not None and node.id == "mapping":
                for k, v in node.value:
                    if k.value == key:
                        best, child = k, v
                        break
            elif node is not None and node.id == "sequence" and isinstance(key, int) and key < len(node.value):
                child = best = node.value[key]
            if child is None:
                break
            node = child
        return (best.start_mark.line + 1) if best is not None else 1


def is_text(value):
    if isinstance(value, str):
        return bool(value.strip())
    return isinstance(value, dict) and isinstance(value.get("en"), str) and all(isinstance(v, str) for v in value.values())


def _has_nested_unbounded_repeat(parsed, inside_unbounded=False):
    """True for (a+)+ shapes, which make a backtracking engine exponential."""
    for op, arg in parsed:
        if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
            lo, hi, sub = arg
            unbounded = hi == sre_constants.MAXREPEAT or hi > 1000
            if unbounded and inside_unbounded:
                return True
            if _has_nested_unbounded_repeat(sub, inside_unbounded or unbounded):
                return True
        elif op == sre_constants.SUBPATTERN:
            if _has_nested_unbounded_repeat(arg[-1], inside_unbounded):
                return True
        elif op == sre_constants.BRANCH:
            if any(_has_nested_unbounded_repeat(b, inside_unbounded) for b in arg[1]):
                return True
    return False


def _non_ascii_unit(pattern):
    """The first non-ASCII character that a [...] class or a repeat treats as one unit, or None.

    The scanner (Hyperscan) reads bytes, so '‘' is three units to it: in
    ["'‘] it is three one-byte alternatives, and in ’? only its last byte is
    optional. RE2 reads characters, so the two backends would disagree. Read
    from the text, not from sre_parse, which turns (?:'|‘) into a class too."""
    if pattern.isascii():  # nearly every signature: skip the walk (it runs on every uncached load)
        return None
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            elif ord(c) > 127:
                return c
        elif c == "[":
            in_class = True
            if pattern[i + 1:i + 2] == "^":
                i += 1
            if pattern[i + 1:i + 2] == "]":  # a literal ']' first in the class
                i += 1
        elif ord(c) > 127 and pattern[i + 1:i + 2] in ("?", "*", "+", "{"):
            return c
        i += 1
    return None


def _re2_problem(pattern):
    """Why RE2 (linear time, used for exclude and values) cannot take `pattern`, or None."""
    try:
        import re2
    except ImportError:  # pragma: no cover - google-re2 is a dependency; a stripped install still loads
        return None
    options = re2.Options()
    options.log_errors = False  # the problem is reported as FILE:LINE, not logged by RE2 on stderr
    try:
        re2.compile(pattern, options)
    except Exception as e:  # re2.error, or TypeError/ValueError from the binding; all mean "cannot take it"
        why = e.args[0].decode(errors="replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        return (f"RE2, which runs it in linear time, cannot take this regex ({why}); no look-around, "
                "backreferences, atomic groups or repeats above {1000}")
    return None


def scanner_problem(patterns: Sequence[tuple[str, bool]]) -> Optional[str]:
    """Why the Hyperscan scanner rejects this list of (regex, case_sensitive), or None.

    Compiles nothing to disk; None also where Hyperscan is not installed (the
    fallback then runs the patterns with RE2, checked by regex_problem)."""
    try:
        import hyperscan
    except ImportError:
        return None
    flags = [(0 if cs else hyperscan.HS_FLAG_CASELESS) | hyperscan.HS_FLAG_MULTILINE for _, cs in patterns]
    try:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=[p.encode() for p, _ in patterns], ids=list(range(len(patterns))), flags=flags)
    except hyperscan.error as e:
        return (str(e) or e.__class__.__name__).rstrip(".")
    return None


def regex_problem(pattern, for_scanner):
    """Why `pattern` is unusable, or None. Scanner patterns must also suit Hyperscan."""
    try:  # parsed once (loading many entries is mostly this), compiled from the parse only where it can tell more
        parsed = sre_parse.parse(pattern)
        # Compiling finds only a variable-width look-behind wrong that parsing let
        # through, and it answers whether the empty string matches, which a
        # pattern at least one character wide never does.
        compiled = sre_compile.compile(parsed) if "(?<" in pattern or parsed.getwidth()[0] == 0 else None
    except (re.error, sre_constants.error, RecursionError, OverflowError) as e:
        return f"regex does not compile: {e}"
    if _has_nested_unbounded_repeat(parsed):
        return "regex has a nested unbounded repeat such as (a+)+ and could backtrack forever; bound the inner or outer repeat"
    if for_scanner:
        if re.search(r"\(\?[=!<]|\\[1-9]|\(\?P", pattern):
            return "signature regex uses look-around, a backreference or a named group; the linear-time scanner cannot run it (put named groups in `values`)"
        if compiled is not None and compiled.match(""):
            return "signature regex matches the empty string, so it would match every line"
        unit = _non_ascii_unit(pattern)
        if unit:
            return (f"signature regex puts the non-ASCII character {unit!r} in a [...] class or under a repeat; "
                    f"the scanner reads bytes, so write it as an alternative: (?:['\"]|{unit}) or (?:{unit})?")
    return _re2_problem(pattern)


def check_entry(data, lines: NodeLines, path: str, stem: str, trusted: bool = False):
    """Every schema problem of one parsed entry. trusted=True skips the regex
    checks (bundled entries: `kb validate` ran them all before release, and they
    were a third of a cold start)."""
    out = []

    def bad(message, *key):
        out.append(Problem(path, lines.line(*key), message))

    if not isinstance(data, dict):
        return [Problem(path, 1, "an entry must be a YAML mapping of keys to values")]
    for key in data:
        if key not in TOP_KEYS:
            bad(f"unknown key '{key}': this troubleshooter knows schema {max(SCHEMA_VERSIONS)} "
                f"(keys: {', '.join(TOP_KEYS)}); was the entry written for a newer troubleshooter? "
                "Upgrade it, or remove the key; the entry is skipped", key)
    for key, required in TOP_KEYS.items():
        if required and key not in data:
            bad(f"missing required key '{key}'")
    entry_id = data.get("id")
    if "id" in data:
        if not isinstance(entry_id, str) or not ID_RE.match(entry_id):
            bad("id must be lowercase letters, digits and '-'", "id")
        elif entry_id != stem:
            bad(f"id '{entry_id}' must equal the file name '{stem}'", "id")
    for key in ("title", "summary"):
        if key in data and not is_text(data[key]):
            bad(f"'{key}' must be a non-empty string or a {{en: ..., <lang>: ...}} map", key)
    if isinstance(data.get("title"), str) and len(data["title"]) > 80:
        bad("title is longer than 80 characters", "title")
    if "tags" in data and not (isinstance(data["tags"], list) and data["tags"] and all(isinstance(t, str) for t in data["tags"])):
        bad("tags must be a non-empty list of strings", "tags")
    if "severity" in data and data["severity"] not in SEVERITIES:
        bad(f"severity must be one of {sorted(SEVERITIES)}", "severity")
    out += _check_patterns(data.get("signatures"), "signatures", lines, path, required=True, trusted=trusted)
    out += _check_patterns(data.get("exclude"), "exclude", lines, path, required=False, trusted=trusted)
    phrases = data.get("phrases", [])
    if not (isinstance(phrases, list) and all(isinstance(p, str) and p.strip() for p in phrases)):
        bad("phrases must be a list of non-empty strings", "phrases")
    values = data.get("values", {})
    if not isinstance(values, dict):
        bad("values must map a name to a regex with a group of that name", "values")
    else:
        for name, rx in values.items():
            problem = (None if trusted else regex_problem(rx, for_scanner=False)) if isinstance(rx, str) else "must be a regex string"
            if problem:
                bad(f"value '{name}': {problem}", "values", name)
            elif f"(?P<{name}>" not in rx:
                bad(f"value '{name}': the regex needs a named group (?P<{name}>...)", "values", name)
    causes = data.get("causes")
    if "causes" in data and not (isinstance(causes, list) and causes and all(is_text(c) or isinstance(c, dict)
                                                                             for c in causes)):
        bad("causes must be a non-empty list of texts", "causes")
    elif isinstance(causes, list):
        for i, cause in enumerate(causes):  # a text, or {text, when} (a cause that fits only some logs)
            if not is_text(cause) and not (set(cause) == {"text", "when"} and is_text(cause["text"])
                                           and isinstance(cause["when"], dict)):
                bad(f"causes[{i + 1}] must be a text, or {{text: ..., when: CONDITION}}", "causes", i)
    fixes = data.get("fixes")
    if "fixes" in data:
        if not (isinstance(fixes, list) and fixes):
            bad("fixes must be a non-empty list", "fixes")
        else:
            for i, fix in enumerate(fixes):
                out += _check_fix(fix, i, lines, path)
    leads_to = data.get("leads_to", [])
    if not (isinstance(leads_to, list) and all(isinstance(x, str) for x in leads_to)):
        bad("leads_to must be a list of entry ids", "leads_to")
    refs = data.get("references", [])
    if not isinstance(refs, list) or not all(
            isinstance(r, dict) and set(r) == {"title", "url"} and str(r["url"]).startswith(("http://", "https://")) for r in refs):
        bad("references must be a list of {title, url} with an http(s) url", "references")
    out += _check_optional(data, bad)
    facts = data.get("facts", [])
    if not isinstance(facts, list):
        bad("facts must be a list of fact rules", "facts")
    else:
        from .facts import validate_fact_rule
        for i, rule in enumerate(facts):
            for message in validate_fact_rule(rule):
                bad(f"fact rule {i + 1}: {message}", "facts", i)
    out += [Problem(path, lines.line(*key), msg) for key, msg in _condition_problems(data)]  # facts.py: when paths/values
    return out


def _condition_problems(data):
    try:
        from .facts import condition_problems
    except ImportError:  # pragma: no cover
        return []
    return condition_problems(data)


def _check_optional(data, bad):
    """The optional fields of schema 2: actor, refines, aliases, checked, draft."""
    version = data.get("schema")
    if "schema" in data and version not in SCHEMA_VERSIONS:
        newer = isinstance(version, int) and not isinstance(version, bool) and version > max(SCHEMA_VERSIONS)
        bad(f"schema {version} is newer than this troubleshooter knows ({max(SCHEMA_VERSIONS)}): upgrade the "
            "troubleshooter to use this entry; it is skipped" if newer else
            f"schema must be one of {sorted(SCHEMA_VERSIONS)}", "schema")
    if "actor" in data and data["actor"] not in ACTORS:
        bad(f"actor must be one of {sorted(ACTORS)}: who can fix it, the user or the site", "actor")
    if "refines" in data and not (isinstance(data["refines"], str) and ID_RE.match(data["refines"])):
        bad("refines must be the id of the broader entry this one is a finer case of", "refines")
    aliases = data.get("aliases", [])
    if not (isinstance(aliases, list) and all(isinstance(a, str) and ID_RE.match(a) for a in aliases)):
        bad("aliases must be a list of ids (e.g. merged candidate ids)", "aliases")
    checked = data.get("checked")
    if checked is not None and not (
        isinstance(checked, dict) and set(checked) <= {"date", "versions"}
        and re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", str(checked.get("date", "")))
        and isinstance(checked.get("versions", []), list)
    ):
        bad("checked must be {date: YYYY-MM-DD, versions: [\"torch 2.9\", ...]}: when the wording and fix were last checked", "checked")
    if "draft" in data and not isinstance(data["draft"], bool):
        bad("draft must be true or false", "draft")
    return []


def _check_patterns(items, key, lines, path, required, trusted=False):
    out = []
    if items is None:
        return [Problem(path, 1, f"missing '{key}'")] if required else []
    if not isinstance(items, list) or (required and not items):
        return [Problem(path, lines.line(key), f"{key} must be a non-empty list")]
    for i, item in enumerate(items):
        where = lines.line(key, i)
        if isinstance(item, str) and key == "exclude":  # shorthand: a bare regex
            item = {"regex": item}
        if not isinstance(item, dict):
            out.append(Problem(path, where, f"{key}[{i + 1}] must be a mapping with 'regex' or 'literal'"))
            continue
        unknown = set(item) - (EXCLUDE_KEYS if key == "exclude" else SIGNATURE_KEYS)
        if unknown:
            out.append(Problem(path, where, f"{key}[{i + 1}]: unknown key(s) {sorted(unknown)}"))
        if ("regex" in item) == ("literal" in item):
            out.append(Problem(path, where, f"{key}[{i + 1}] needs exactly one of 'regex' or 'literal'"))
            continue
        if "regex" in item:
            rx = item["regex"]
            problem = (None if trusted else regex_problem(rx, for_scanner=True)) if isinstance(rx, str) else "regex must be a string"
            if problem:
                out.append(Problem(path, where, f"{key}[{i + 1}]: {problem}"))
        elif not (isinstance(item["literal"], str) and len(item["literal"]) >= 4):
            out.append(Problem(path, where, f"{key}[{i + 1}]: a literal must be a string of at least 4 characters"))
        if key == "signatures":
            w = item.get("weight")
            if not isinstance(w, (int, float)) or not 0 < w <= 1:
                out.append(Problem(path, where, f"{key}[{i + 1}]: weight must be a number in (0, 1]"))
        if "case" in item and not isinstance(item["case"], bool):
            out.append(Problem(path, where, f"{key}[{i + 1}]: case must be true or false"))
        if "next_line" in item and not isinstance(item["next_line"], bool):
            out.append(Problem(path, where, f"{key}[{i + 1}]: next_line must be true or false"))
    return out


def _check_fix(fix, i, lines, path):
    where = lines.line("fixes", i)
    if not isinstance(fix, dict):
        return [Problem(path, where, f"fixes[{i + 1}] must be a mapping with title and text")]
    out = []
    unknown = set(fix) - FIX_KEYS
    if unknown:
        out.append(Problem(path, where, f"fixes[{i + 1}]: unknown key(s) {sorted(unknown)}"))
    if not is_text(fix.get("title")):
        out.append(Problem(path, where, f"fixes[{i + 1}]: 'title' must be a non-empty text"))
    if not is_text(fix.get("text")) and not fix.get("code"):
        out.append(Problem(path, where, f"fixes[{i + 1}]: needs a 'text', a 'code' block, or both"))
    if "scheduler" in fix and fix["scheduler"] not in SCHEDULERS:
        out.append(Problem(path, where, f"fixes[{i + 1}]: scheduler must be one of {sorted(SCHEDULERS)}"))
    if "when" in fix and not isinstance(fix["when"], (dict, list)):
        out.append(Problem(path, where, f"fixes[{i + 1}]: when must be a condition (see docs/knowledge-schema.md)"))
    code = fix.get("code")
    if code is not None:
        if not (isinstance(code, dict) and set(code) <= {"lang", "text"} and is_text(code.get("text"))):
            out.append(Problem(path, where, f"fixes[{i + 1}]: code must be {{lang, text}}"))
        elif code.get("lang", "text") not in CODE_LANGS:
            out.append(Problem(path, where, f"fixes[{i + 1}]: code lang must be one of {sorted(CODE_LANGS)}"))
    return out
