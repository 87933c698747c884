"""Renderers: a Diagnosis as text for a person, or as JSON for a script.

Both lay out view.FindingView; what to show (texts, chosen fixes) is decided there.
"""
import json
import textwrap

from .view import entry_view

_STYLES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}
EVIDENCE_WIDTH = 300
SCHEDULER_NAMES = {"slurm": "Slurm", "pbs": "PBS", "lsf": "LSF"}


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
    """Numbered fixes (view.FixView), in the order chosen for this job."""
    out = []
    for n, fix in enumerate(fixes, 1):
        notes = []
        if fix.scheduler:
            notes.append(f"{SCHEDULER_NAMES.get(fix.scheduler, fix.scheduler)} jobs")
        if fix.held is False:
            notes.append("probably not for this job")
        note = style(f"  ({'; '.join(notes)})", "dim") if notes else ""
        out.append(f"{indent}{style(f'{n}. ' + fix.title, 'bold')}{note}")
        if fix.text:
            out.append(_indent(textwrap.fill(" ".join(fix.text.split()), 76) if "\n\n" not in fix.text else fix.text,
                               indent + "   "))
        if fix.code is not None:
            out.append(_indent(style(fix.code.text, "cyan"), indent + "     "))
    return out


def who_acts(view):
    """One line saying who must act, when it is not the user."""
    if view.actor == "site":
        return ("Your site's admins must fix this, not you; send them this report (`troubleshoot --json` output), "
                "the job ID and the node name.")
    return ""


def _clip(text, width=EVIDENCE_WIDTH):
    return text if len(text) <= width else text[:width - 1] + "…"


def human(diagnosis, style, lang="en"):
    """The fix first, then the evidence with line numbers."""
    lines = []
    if not diagnosis.findings:
        lines.append(f"{style(diagnosis.source, 'bold')}: {style('no known failure', 'green')} "
                     f"({diagnosis.lines} lines scanned).")
        if diagnosis.key_lines:
            lines.append("")
            lines.append(style("  No known failure; these lines ended the job:", "bold"))
            lines += _key_lines(diagnosis.key_lines, style)
            lines.append("")
        lines.append("  Nothing in this log matches a known GPU/HPC job failure. If the job still failed, send "
                     + _helpdesk(diagnosis.site) + ":")
        lines.append("  the whole log, your job script, and the output of `troubleshoot probe --json` run inside a job.")
        return "\n".join(lines)
    top, *others = diagnosis.views(lang)
    tag = style(f"[{top.id}, confidence {top.confidence:.0%}]", "dim")
    lines.append(f"{style(diagnosis.source, 'bold')}: {style(top.title, 'red', 'bold')}  {tag}")
    lines.append(f"  {top.summary}")
    if top.refines:
        lines.append(style(f"  A finer case of: {', '.join(top.refines)}", "dim"))
    if who_acts(top):
        lines.append("  " + style(who_acts(top), "yellow", "bold"))
    if top.values:
        lines.append("  Found: " + ", ".join(f"{k} = {v}" for k, v in top.values))
    lines.append("")
    lines.append(style("  How to fix it:", "bold"))
    lines += render_fixes(top.fixes, style, "  ")
    if top.causes:
        lines.append("")
        lines.append(style("  Why this happens:", "bold"))
        lines += [f"  - {c}" for c in top.causes]
    lines.append("")
    lines.append(style("  Evidence:", "bold"))
    width = len(str(max((e.line for e in top.evidence), default=0)))
    for e in top.evidence:
        where = f"{e.line:>{width}}" if e.line else "fact".rjust(width)
        lines.append(f"  {style(where, 'dim')} | {_clip(e.text)}")
    for label, items in (("Supported by", top.confirmed_by), ("Against it", top.ruled_out_by)):
        if items:
            lines.append(f"  {label}: " + "; ".join(items))
    if others:
        lines.append("")
        lines.append(style("  Also found (probably consequences or secondary):", "bold"))
        for v in others:
            first = v.evidence[0] if v.evidence else None
            where = f" at line {first.line}" if first and first.line else ""
            lines.append(f"  - {v.title} [{v.id}, {v.confidence:.0%}]{where}  (troubleshoot explain {v.id})")
    shown = {e.line for v in diagnosis.views(lang) for e in v.evidence}
    other_errors = [k for k in diagnosis.key_lines if k.line not in shown]
    if other_errors:
        lines.append("")
        lines.append(style("  Other errors near the end of the log:", "bold"))
        lines += _key_lines(other_errors, style)
    if diagnosis.site.get("helpdesk_url"):
        lines.append("")
        lines.append(style(f"  Still stuck, or was this wrong? Submit the log at {diagnosis.site['helpdesk_url']}", "dim"))
    return "\n".join(lines)


def _helpdesk(site):
    url = site.get("helpdesk_url")
    return f"the log to {url}" if url else f"{site.get('helpdesk', 'your helpdesk')}"


def _key_lines(keys, style):
    """The lines that most likely ended the job (keylines.KeyLine), with what can be said of each."""
    width = len(str(max((k.line for k in keys), default=0)))
    out = []
    for k in keys:
        out.append(f"  {style(f'{k.line:>{width}}', 'dim')} | {_clip(k.text)}")
        out.append(f"  {' ' * width}   {style(k.explanation, 'yellow')}")
    return out


def explain(entry, site, lang="en", style=None):
    """One entry for a human, like `rustc --explain`."""
    style = style or Style(False)
    view = entry_view(entry, lang, site)
    out = [style(f"{view.id}: {view.title}", "bold"), "", view.summary]
    if view.refines:
        out.append(style(f"A finer case of: {', '.join(view.refines)}", "dim"))
    if who_acts(view):
        out.append(style(who_acts(view), "yellow", "bold"))
    out += ["", style("What it looks like in a log:", "bold")]
    out += [f"  {p}" for p in entry.phrases] or [f"  /{s.pattern}/" for s in entry.signatures]
    out += ["", style("Why it happens:", "bold")] + [f"  - {c}" for c in view.causes]
    out += ["", style("How to fix it:", "bold")]
    out += render_fixes(view.fixes, style)
    if view.leads_to:
        out += ["", f"Often followed by: {', '.join(view.leads_to)}"]
    if view.references:
        out += ["", style("Read more:", "bold")] + [f"  {title}: {url}" for title, url in view.references]
    out += ["", style(f"Entry file: {entry.path}", "dim")]
    return "\n".join(out)


def as_json(document):
    return json.dumps(document, ensure_ascii=False)
