"""Renderers: a Diagnosis as text for a person, or as JSON for a script."""
import json
import textwrap

from .text import fill_placeholders, localised

_STYLES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


class Style:
    def __init__(self, enabled):
        self.enabled = enabled

    def __call__(self, text, *names):
        if not self.enabled or not names:
            return text
        return f"\x1b[{';'.join(_STYLES[n] for n in names)}m{text}\x1b[0m"


def _indent(text, prefix):
    return textwrap.indent(text, prefix, lambda line: True)


def render_fixes(fixes, style, indent="  "):
    out = []
    for n, fix in enumerate(fixes, 1):
        out.append(f"{indent}{style(f'{n}. ' + fix['title'], 'bold')}")
        if fix["text"]:
            out.append(_indent(textwrap.fill(" ".join(fix["text"].split()), 76) if "\n\n" not in fix["text"] else fix["text"], indent + "   "))
        if fix.get("code"):
            out.append(_indent(style(fix["code"]["text"], "cyan"), indent + "     "))
    return out


def human(diagnosis, style, lang="en", verbose=False):
    """The fix first, then the evidence with line numbers."""
    lines = []
    if not diagnosis.findings:
        lines.append(f"{style(diagnosis.source, 'bold')}: {style('no known failure', 'green')} "
                     f"({diagnosis.lines} lines scanned).")
        lines.append("  Nothing in this log matches a known GPU/HPC job failure. If the job still failed, send the helpdesk:")
        lines.append("  the whole log, your job script, and the output of `troubleshoot probe --json` run inside a job.")
        return "\n".join(lines)
    top, *others = diagnosis.findings
    d = top.to_dict(diagnosis.site, lang)
    tag = style("[{}, confidence {:.0%}]".format(top.id, d["confidence"]), "dim")
    lines.append(f"{style(diagnosis.source, 'bold')}: {style(d['title'], 'red', 'bold')}  {tag}")
    lines.append(f"  {d['summary']}")
    if d["values"]:
        lines.append("  Found: " + ", ".join(f"{k} = {v}" for k, v in d["values"].items()))
    lines.append("")
    lines.append(style("  How to fix it:", "bold"))
    lines += render_fixes(d["fixes"], style, "  ")
    if d["causes"]:
        lines.append("")
        lines.append(style("  Why this happens:", "bold"))
        lines += [f"  - {c}" for c in d["causes"]]
    lines.append("")
    lines.append(style("  Evidence:", "bold"))
    width = len(str(max((e["line"] for e in d["evidence"]), default=0)))
    for e in d["evidence"]:
        where = f"{e['line']:>{width}}" if e["line"] else "fact".rjust(width)
        lines.append(f"  {style(where, 'dim')} | {e['text'][:300]}")
    for label, items in (("Supported by", d["facts"]["confirmed_by"]), ("Against it", d["facts"]["ruled_out_by"])):
        if items:
            lines.append(f"  {label}: " + "; ".join(items))
    if others:
        lines.append("")
        lines.append(style("  Also found (probably consequences or secondary):", "bold"))
        for f in others:
            first = f.evidence[0] if f.evidence else None
            where = f" at line {first.line}" if first and first.line else ""
            lines.append(f"  - {localised(f.entry.title, lang)} [{f.id}, {f.confidence:.0%}]{where}"
                         f"  (troubleshoot explain {f.id})")
    return "\n".join(lines)


def explain(entry, site, lang="en", style=Style(False)):
    """One entry for a human, like `rustc --explain`."""
    data = entry.data
    out = [style(f"{entry.id}: {localised(data['title'], lang)}", "bold"), "", localised(data["summary"], lang), ""]
    out.append(style("What it looks like in a log:", "bold"))
    out += [f"  {p}" for p in entry.phrases] or [f"  /{s.pattern}/" for s in entry.signatures]
    out += ["", style("Why it happens:", "bold")] + [f"  - {localised(c, lang)}" for c in data["causes"]]
    out += ["", style("How to fix it:", "bold")]
    fixes = [{"title": fill_placeholders(localised(f["title"], lang), site, {}),
              "text": fill_placeholders(localised(f.get("text", ""), lang), site, {}).strip(),
              **({"code": {"lang": f["code"].get("lang", "text"), "text": fill_placeholders(localised(f["code"]["text"], lang), site, {}).rstrip()}} if f.get("code") else {})}
             for f in data["fixes"]]
    out += render_fixes(fixes, style)
    if entry.leads_to:
        out += ["", f"Often followed by: {', '.join(entry.leads_to)}"]
    if data.get("references"):
        out += ["", style("Read more:", "bold")] + [f"  {r['title']}: {r['url']}" for r in data["references"]]
    out += ["", style(f"Entry file: {entry.path}", "dim")]
    return "\n".join(out)


def as_json(document):
    return json.dumps(document, ensure_ascii=False)
