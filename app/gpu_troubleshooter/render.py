"""Renderers: a Diagnosis as text for a person, or as JSON for a script.

Both lay out view.FindingView; what to show (texts, chosen fixes) is decided there.
"""
import json
import re
import textwrap

from .view import entry_view

_STYLES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}
EVIDENCE_WIDTH = 300
SCHEDULER_NAMES = {"slurm": "Slurm", "pbs": "PBS", "lsf": "LSF", "flux": "Flux",
                   "condor": "HTCondor", "kubernetes": "Kubernetes"}


class Style:
    def __init__(self, enabled):
        self.enabled = enabled

    def __call__(self, text, *names):
        if not self.enabled or not names:
            return text
        return f"\x1b[{';'.join(_STYLES[n] for n in names)}m{text}\x1b[0m"


def _indent(text, prefix):
    return textwrap.indent(text, prefix, lambda line: True)


def render_fixes(fixes, style, indent="  ", start=1, lang="en"):
    """Numbered fixes (view.FixView), in the order chosen for this job."""
    out = []
    for n, fix in enumerate(fixes, start):
        notes = []
        if fix.scheduler:
            notes.append(label(lang, "jobs_of").format(scheduler=SCHEDULER_NAMES.get(fix.scheduler, fix.scheduler)))
        if fix.held is False:
            notes.append(label(lang, "not_this_job"))
        note = style(f"  ({'; '.join(notes)})", "dim") if notes else ""
        out.append(f"{indent}{style(f'{n}. ' + fix.title, 'bold')}{note}")
        if fix.text:
            out.append(_indent(textwrap.fill(" ".join(fix.text.split()), 76) if "\n\n" not in fix.text else fix.text,
                               indent + "   "))
        if fix.code is not None:
            out.append(_indent(style(fix.code.text, "cyan"), indent + "     "))
    return out


def who_acts(view, lang="en"):
    """One line saying who must act, when it is not the user."""
    return label(lang, "site_long") if view.actor == "site" else ""


def _clip(text, width=EVIDENCE_WIDTH, span=None):
    """A line cut to `width` around the part that matched, with an ellipsis on each cut side."""
    if len(text) <= width:
        return text
    width = max(width, 20)
    start, end = span if span else (0, 0)
    if end - start >= width - 2:         # the match alone is too wide: show its start
        end = start + width - 2
    room = width - (end - start)
    left = max(0, start - room // 2)
    right = min(len(text), left + width)
    left = max(0, right - width)
    if left > 0:
        left += 1
    if right < len(text):
        right -= 1
    return ("…" if left > 0 else "") + text[left:right] + ("…" if right < len(text) else "")


def _terminal_width():
    import shutil
    return shutil.get_terminal_size((100, 24)).columns


# The first screen's own words. The translations follow the seed guides' terms (docs/translations.md:
# hr posao/čvor, sr job/nod, ko 작업/노드) and were checked by translating them back into English.
LABELS = {
    "en": {"jobs_of": "{scheduler} jobs", "not_this_job": "probably not for this job",
           "who": "Who fixes it:", "you": "you", "site": "the site's admins (not something you can fix)",
           "looks": "What it looks like in a log:", "why_long": "Why it happens:", "follows": "Often followed by:",
           "read": "Read more:", "file": "Entry file:",
           "site_long": "Your site's admins must fix this, not you; send them this report (`troubleshoot --json` "
                        "output), the job ID and the node name.",
           "why": "Why:", "found": "Found:", "how": "How to fix it:", "evidence": "Evidence:",
           "more": "{n} more fixes: troubleshoot explain {id}   (or troubleshoot --full)",
           "one_more": "1 more fix: troubleshoot explain {id}   (or troubleshoot --full)",
           "also": "Also found:", "send": "Send this message to {to}", "unknown": "unknown",
           "subject": "Subject: {title} (job {job})",
           "hello": "Hello, my job failed with a problem on the node side that I cannot fix myself.",
           "job": "Job ID", "node": "Node", "time": "Time", "log": "Log file", "diagnosis": "Diagnosis",
           "says": "The log says:", "ask": "Could you check the node, please?"},
    "hr": {"jobs_of": "za {scheduler} poslove", "not_this_job": "vjerojatno nije za ovaj posao",
           "who": "Tko to rješava:", "you": "vi", "site": "administratori vašeg centra (ne možete to sami popraviti)",
           "looks": "Kako to izgleda u logu:", "why_long": "Zašto se to događa:", "follows": "Često slijedi:",
           "read": "Više o tome:", "file": "Datoteka unosa:",
           "site_long": "Ovo moraju popraviti administratori vašeg centra, ne vi; pošaljite im ovaj izvještaj "
                        "(izlaz `troubleshoot --json`), ID posla i ime čvora.",
           "why": "Zašto:", "found": "Pronađeno:", "how": "Kako popraviti:", "evidence": "Retci iz loga:",
           "more": "Ostala rješenja ({n}): troubleshoot explain {id}   (ili troubleshoot --full)",
           "one_more": "Ostala rješenja (1): troubleshoot explain {id}   (ili troubleshoot --full)",
           "also": "Pronađeno i:", "send": "Pošaljite ovu poruku podršci ({to})", "unknown": "nepoznato",
           "subject": "Predmet: {title} (posao {job})",
           "hello": "Pozdrav, moj posao je prekinut zbog problema na čvoru koji ne mogu sam riješiti.",
           "job": "ID posla", "node": "Čvor", "time": "Vrijeme", "log": "Log datoteka", "diagnosis": "Dijagnoza",
           "says": "U logu piše:", "ask": "Možete li, molim vas, provjeriti čvor?"},
    "sr": {"jobs_of": "za {scheduler} jobove", "not_this_job": "verovatno nije za ovaj job",
           "who": "Ko to rešava:", "you": "vi", "site": "administratori vašeg centra (ne možete sami da popravite)",
           "looks": "Kako to izgleda u logu:", "why_long": "Zašto se to dešava:", "follows": "Često sledi:",
           "read": "Više o tome:", "file": "Fajl unosa:",
           "site_long": "Ovo moraju da poprave administratori vašeg centra, ne vi; pošaljite im ovaj izveštaj "
                        "(izlaz `troubleshoot --json`), ID joba i ime noda.",
           "why": "Zašto:", "found": "Pronađeno:", "how": "Kako popraviti:", "evidence": "Linije iz loga:",
           "more": "Ostala rešenja ({n}): troubleshoot explain {id}   (ili troubleshoot --full)",
           "one_more": "Ostala rešenja (1): troubleshoot explain {id}   (ili troubleshoot --full)",
           "also": "Pronađeno i:", "send": "Pošaljite ovu poruku podršci ({to})", "unknown": "nepoznato",
           "subject": "Naslov: {title} (job {job})",
           "hello": "Pozdrav, moj job je prekinut zbog problema na nodu koji ne mogu sam da rešim.",
           "job": "ID joba", "node": "Nod", "time": "Vreme", "log": "Log fajl", "diagnosis": "Dijagnoza",
           "says": "U logu piše:", "ask": "Možete li, molim vas, da proverite nod?"},
    "ko": {"jobs_of": "{scheduler} 작업용", "not_this_job": "이 작업에는 해당하지 않을 가능성이 높음",
           "who": "누가 고치나요:", "you": "사용자 본인", "site": "사이트 관리자 (사용자가 직접 고칠 수 없음)",
           "looks": "로그에서 보이는 모습:", "why_long": "발생 원인:", "follows": "흔히 뒤따르는 오류:",
           "read": "더 읽어보기:", "file": "항목 파일:",
           "site_long": "사용자가 아니라 사이트 관리자가 고쳐야 합니다. 이 보고서(`troubleshoot --json` 출력), "
                        "작업 ID, 노드 이름을 관리자에게 보내세요.",
           "why": "원인:", "found": "찾은 값:", "how": "해결 방법:", "evidence": "로그 근거:",
           "more": "다른 해결 방법 {n}개: troubleshoot explain {id}   (또는 troubleshoot --full)",
           "one_more": "다른 해결 방법 1개: troubleshoot explain {id}   (또는 troubleshoot --full)",
           "also": "함께 발견됨:", "send": "이 메시지를 헬프데스크에 보내세요 ({to})", "unknown": "알 수 없음",
           "subject": "제목: {title} (작업 {job})",
           "hello": "안녕하세요. 제가 직접 고칠 수 없는 노드 쪽 문제로 작업이 실패했습니다.",
           "job": "작업 ID", "node": "노드", "time": "시간", "log": "로그 파일", "diagnosis": "진단",
           "says": "로그 내용:", "ask": "노드를 확인해 주시겠습니까?"},
}


def label(lang, key):
    return LABELS.get(lang, LABELS["en"]).get(key) or LABELS["en"][key]


SHORT_FIXES = 3


def short_fixes(view):
    """The fixes of the first screen: the first 1-3 whose condition does not fail (view order)."""
    return tuple(f for f in view.fixes if f.held is not False)[:SHORT_FIXES]


def why_line(view):
    """One line of why: the first sentence of the first cause that fits this log (held first,
    never one whose condition is false), else of the summary."""
    likely = view.likely_causes
    text = " ".join((likely[0] if likely else view.summary).split())
    cut = re.search(r"(?<=[.!?。])\s", text)
    return text[:cut.start()] if cut else text


def helpdesk_message(view, diagnosis, lang="en"):
    """A ready-to-send message for a site-side failure: job id, node, time and evidence filled in
    from the log's values and the facts; "unknown" where neither says. In the reader's language."""
    values = dict(view.values)
    facts = diagnosis.facts or {}
    unknown = label(lang, "unknown")

    def pick(*names):
        for n in names:
            v = values.get(n) or facts.get(n)
            if v not in (None, ""):
                return str(v)
        return unknown

    job = pick("job_id", "jobid", "scheduler.job_id")
    node = pick("node", "hostname", "host", "host.name", "node.name")
    when = pick("time", "timestamp", "date")
    evidence = "\n".join(f"  line {e.line}: {e.text}" if e.line else f"  {e.text}" for e in view.evidence[:5])
    return "\n".join([
        label(lang, "subject").format(title=view.title, job=job), "",
        label(lang, "hello"),
        f"  {label(lang, 'job')}: {job}", f"  {label(lang, 'node')}: {node}", f"  {label(lang, 'time')}: {when}",
        f"  {label(lang, 'log')}: {diagnosis.source}", f"  {label(lang, 'diagnosis')}: {view.id} (troubleshoot)",
        label(lang, "says"), evidence, label(lang, "ask")])


def site_fix(view, diagnosis, lang="en"):
    from .view import FixView
    title = label(lang, "send").format(to=_helpdesk(diagnosis.site))
    return FixView(title=title, text="", code=None, held=True, scheduler=None), helpdesk_message(view, diagnosis, lang)


def _wrapped(head, text, width):
    """`head text` as lines of at most `width` columns (the head may carry colour codes)."""
    body = textwrap.wrap(text, width, initial_indent="  " + "x" * len(re.sub(r"\x1b\[[0-9;]*m", "", head)) + " ",
                         subsequent_indent="    ", break_on_hyphens=False) or [""]
    first = body[0][len(re.sub(r"\x1b\[[0-9;]*m", "", head)) + 3:]
    return [f"  {head} {first}"] + body[1:]


def human(diagnosis, style, lang="en", full=False, width=None):
    """The first screen by default (title, who acts, why, the 1-3 chosen fixes, the evidence,
    what more there is); `full` prints every fix, cause and finding."""
    if full:
        return human_full(diagnosis, style, lang)
    if not diagnosis.findings:
        return human_full(diagnosis, style, lang)
    width = width or _terminal_width()
    top, *others = diagnosis.views(lang)
    lines = []
    tag = style(f"[{top.id}, confidence {top.confidence:.0%}]", "dim")
    lines.append(f"{style(diagnosis.source, 'bold')}: {style(top.title, 'red', 'bold')}  {tag}")
    who = label(lang, "site") if top.actor == "site" else label(lang, "you")
    lines.append(f"  {style(label(lang, 'who'), 'bold')} {style(who, 'yellow', 'bold') if top.actor == 'site' else who}")
    wrap = max(width - 2, 40)
    lines += _wrapped(style(label(lang, "why"), "bold"), why_line(top), wrap)
    if top.values:
        lines += _wrapped(label(lang, "found"), ", ".join(f"{k} = {v}" for k, v in top.shown_values or top.values), wrap)
    lines.append("")
    lines.append(style(f"  {label(lang, 'how')}", "bold"))
    fixes = short_fixes(top)
    if top.actor == "site":
        fix, message = site_fix(top, diagnosis, lang)
        lines.append(f"  {style('1. ' + fix.title, 'bold')}")
        lines.append(_indent(style(message, "cyan"), "       "))
        lines += render_fixes(fixes[:SHORT_FIXES - 1], style, "  ", start=2, lang=lang)
        fixes = fixes[:SHORT_FIXES - 1]
    else:
        lines += render_fixes(fixes, style, "  ", lang=lang)
    lines.append("")
    lines.append(style(f"  {label(lang, 'evidence')}", "bold"))
    num = len(str(max((e.line for e in top.evidence), default=0)))
    room = max(width - num - 5, 20)
    for e in top.evidence:
        where = f"{e.line:>{num}}" if e.line else "fact".rjust(num)
        lines.append(f"  {style(where, 'dim')} | {_clip(e.text, room, e.span)}")
    more = len(top.fixes) - len(fixes)
    lines.append("")
    if more > 0:
        lines.append(style("  " + label(lang, "more" if more != 1 else "one_more").format(n=more, id=top.id), "dim"))
    for v in others[:3]:
        first = v.evidence[0] if v.evidence else None
        where = f" (line {first.line})" if first and first.line else ""
        lines.append(f"  {label(lang, 'also')} {v.title}{where}  (troubleshoot explain {v.id})")
    if len(others) > 3:
        lines.append(style(f"  ... and {len(others) - 3} more findings: troubleshoot --full", "dim"))
    lines += _after_findings(diagnosis, [top, *others], style)
    return "\n".join(lines).rstrip("\n")


def human_full(diagnosis, style, lang="en"):
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
    views = diagnosis.views(lang)
    top, *others = views
    tag = style(f"[{top.id}, confidence {top.confidence:.0%}]", "dim")
    lines.append(f"{style(diagnosis.source, 'bold')}: {style(top.title, 'red', 'bold')}  {tag}")
    lines.append(f"  {top.summary}")
    if top.refines:
        lines.append(style(f"  A finer case of: {', '.join(top.refines)}", "dim"))
    if who_acts(top, lang):
        lines.append("  " + style(who_acts(top, lang), "yellow", "bold"))
    if top.values:
        lines.append("  Found: " + ", ".join(f"{k} = {v}" for k, v in top.shown_values or top.values))
    lines.append("")
    lines.append(style("  How to fix it:", "bold"))
    lines += render_fixes(top.fixes, style, "  ", lang=lang)
    if top.causes:
        lines.append("")
        lines.append(style("  Why this happens:", "bold"))
        held = top.causes_held or (None,) * len(top.causes)
        lines += [f"  - {c}" + (style(f"  ({label(lang, 'not_this_job')})", "dim") if h is False else "")
                  for c, h in zip(top.causes, held)]
    lines.append("")
    lines.append(style("  Evidence:", "bold"))
    width = len(str(max((e.line for e in top.evidence), default=0)))
    for e in top.evidence:
        where = f"{e.line:>{width}}" if e.line else "fact".rjust(width)
        lines.append(f"  {style(where, 'dim')} | {_clip(e.text)}")
    for heading, items in (("Supported by", top.confirmed_by), ("Against it", top.ruled_out_by)):
        if items:
            lines.append(f"  {heading}: " + "; ".join(items))
    if others:
        lines.append("")
        lines.append(style("  Also found (probably consequences or secondary):", "bold"))
        for v in others:
            first = v.evidence[0] if v.evidence else None
            where = f" at line {first.line}" if first and first.line else ""
            lines.append(f"  - {v.title} [{v.id}, {v.confidence:.0%}]{where}  (troubleshoot explain {v.id})")
    lines += _after_findings(diagnosis, views, style)
    return "\n".join(lines)


def _after_findings(diagnosis, views, style):
    """Below the findings, in the short and the full output alike: the key lines
    no finding shows (other errors), and where to ask for help when the site says."""
    shown = {e.line for v in views for e in v.evidence}
    other_errors = [k for k in diagnosis.key_lines if k.line not in shown]
    lines = []
    if other_errors:
        lines.append("")
        lines.append(style("  Other errors near the end of the log:", "bold"))
        lines += _key_lines(other_errors, style)
    if diagnosis.site.get("helpdesk_url"):
        lines.append("")
        lines.append(style(f"  Still stuck, or was this wrong? Submit the log at {diagnosis.site['helpdesk_url']}", "dim"))
    return lines


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
    if who_acts(view, lang):
        out.append(style(who_acts(view, lang), "yellow", "bold"))
    out += ["", style(label(lang, "looks"), "bold")]
    out += [f"  {p}" for p in entry.phrases] or [f"  /{s.pattern}/" for s in entry.signatures]
    out += ["", style(label(lang, "why_long"), "bold")] + [f"  - {c}" for c in view.causes]
    out += ["", style(label(lang, "how"), "bold")]
    out += render_fixes(view.fixes, style, lang=lang)
    if view.leads_to:
        out += ["", f"{label(lang, 'follows')} {', '.join(view.leads_to)}"]
    if view.references:
        out += ["", style(label(lang, "read"), "bold")] + [f"  {title}: {url}" for title, url in view.references]
    out += ["", style(f"{label(lang, 'file')} {entry.path}", "dim")]
    return "\n".join(out)


def as_json(document):
    return json.dumps(document, ensure_ascii=False)
