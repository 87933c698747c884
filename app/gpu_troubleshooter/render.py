"""Renderers: a Diagnosis as text for a person, or as JSON for a script.

Both lay out view.FindingView; what to show (texts, chosen fixes) is decided there.
"""
import re

from .text import SENTENCE_END
from .view import entry_view

_STYLES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}
EVIDENCE_WIDTH = 300
SCHEDULER_NAMES = {"slurm": "Slurm", "pbs": "PBS", "lsf": "LSF", "sge": "Grid Engine", "flux": "Flux",
                   "condor": "HTCondor", "kubernetes": "Kubernetes"}


class Style:
    def __init__(self, enabled):
        self.enabled = enabled

    def __call__(self, text, *names):
        if not self.enabled or not names:
            return text
        return f"\x1b[{';'.join(_STYLES[n] for n in names)}m{text}\x1b[0m"


def _indent(text, prefix):
    import textwrap  # the terminal's layout only: --json never loads it
    return textwrap.indent(text, prefix, lambda line: True)


def render_fixes(fixes, style, indent="  ", start=1, lang="en"):
    """Numbered fixes (view.FixView), in the order chosen for this job."""
    import textwrap
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
    from .text import terminal_columns
    return terminal_columns(100)


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
           "says": "The log says:", "ask": "Could you check the node, please?",
           "confidence": "confidence", "no_failure": "no known failure", "scanned": "({n} lines scanned).",
           "ended_job": "No known failure; these lines ended the job:",
           "nothing": "Nothing in this log matches a known GPU/HPC job failure. If the job still failed, send {to}:",
           "send_what": "the whole log, your job script, and the output of `troubleshoot probe --json` run inside a job.",
           "to_url": "the log to {url}", "your_helpdesk": "your helpdesk", "site_helpdesk": "your cluster's helpdesk", "finer": "A finer case of:",
           "site_docs": "your cluster's user guide", "supported": "Supported by", "against": "Against it",
           "also_full": "Also found (probably consequences or secondary):", "at_line": " at line {n}",
           "line_short": " (line {n})", "more_findings": "... and {n} more findings: troubleshoot --full",
           "other_errors": "Other errors near the end of the log:",
           "harmless": "Harmless, no action needed (these lines look like errors but are not):",
           "still_stuck": "Still stuck, or was this wrong? Submit the log at {url}", "fact": "fact",
           "line_n": "line {n}", "lines_n": "lines {n}",
           "web_how": "How to fix it", "web_more": "More fixes ({n})", "web_evidence": "Evidence from your log",
           "web_values": "Values found", "web_facts": "What the probe's facts say", "web_confirms": "confirms:",
           "web_against": "argues against:", "web_why": "Why this happens", "web_refs": "References",
           "web_confidence": "Confidence", "web_site": "Your site's admins must fix this, not you.",
           "web_site_send": "Send them this page (use “{button}” below), the job ID and the node name.",
           "kl_raised_own": "Python raised {exc} in your own code", "kl_at": " at {frame}",
           "kl_raised_lib": "Python raised {exc} inside {package}", "kl_called": "; your code called it at {frame}",
           "kl_raised": "Python raised {exc}", "kl_a_library": "a library",
           "kl_abort": "a C++ library aborted the program",
           "kl_crash": "the process crashed (a signal, not a Python exception)",
           "kl_launcher": "the launcher reports which rank failed first",
           "kl_scheduler": "the scheduler's verdict on the job",
           "kl_system": "the shell or the system refused (a missing file or command, no permission, a full disk)",
           "kl_error": "an error line near the end of the log",
           "web_looks": "What it looks like in a log", "web_leads": "Often causes",
           "fell_back": "Not yet translated, shown in {langs}: {fields}"},
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
           "says": "U logu piše:", "ask": "Možete li, molim vas, provjeriti čvor?",
           "confidence": "pouzdanost", "no_failure": "nije pronađena poznata greška", "scanned": "(pregledano redaka: {n}).",
           "ended_job": "Nema poznate greške; posao su završili ovi retci:",
           "nothing": "Ništa u ovom logu ne odgovara poznatoj grešci GPU/HPC poslova. Ako je posao ipak pao, "
                      "pošaljite {to}:",
           "send_what": "cijeli log, skriptu posla i izlaz naredbe `troubleshoot probe --json` pokrenute unutar posla.",
           "to_url": "na {url}", "your_helpdesk": "vašoj podršci", "site_helpdesk": "helpdesk vašeg klastera", "finer": "Uži slučaj greške:",
           "site_docs": "korisnički priručnik vašeg klastera", "supported": "Potvrđuju", "against": "Protiv toga",
           "also_full": "Pronađeno i (vjerojatno posljedice ili sporedno):", "at_line": " u retku {n}",
           "line_short": " (redak {n})", "more_findings": "... i još nalaza: {n} (troubleshoot --full)",
           "other_errors": "Ostale greške pri kraju loga:",
           "harmless": "Bezopasno, ništa ne treba poduzeti (ovi retci izgledaju kao greške, ali nisu):",
           "still_stuck": "Još ne radi ili je ovo pogrešno? Pošaljite log na {url}", "fact": "podatak",
           "line_n": "redak {n}", "lines_n": "retci {n}",
           "web_how": "Kako popraviti", "web_more": "Ostala rješenja ({n})", "web_evidence": "Retci iz vašeg loga",
           "web_values": "Pronađene vrijednosti", "web_facts": "Što kažu podaci sonde", "web_confirms": "potvrđuje:",
           "web_against": "govori protiv:", "web_why": "Zašto se to događa", "web_refs": "Više o tome",
           "web_confidence": "Pouzdanost", "web_site": "Ovo moraju popraviti administratori vašeg centra, ne vi.",
           "web_site_send": "Pošaljite im ovu stranicu (gumb “{button}” niže), ID posla i ime čvora.",
           "kl_raised_own": "Python je javio iznimku {exc} u vašem kodu", "kl_at": " ({frame})",
           "kl_raised_lib": "Python je javio iznimku {exc} unutar {package}",
           "kl_called": "; vaš kod ga je pozvao u {frame}",
           "kl_raised": "Python je javio iznimku {exc}", "kl_a_library": "biblioteke",
           "kl_abort": "C++ biblioteka prekinula je program",
           "kl_crash": "proces se srušio (signal, ne Python iznimka)",
           "kl_launcher": "pokretač javlja koji je rank prvi pao",
           "kl_scheduler": "odluka raspoređivača o poslu",
           "kl_system": "ljuska ili sustav su odbili (nema datoteke ili naredbe, nema dozvole, disk je pun)",
           "kl_error": "redak s greškom pri kraju loga",
           "web_looks": "Kako to izgleda u logu", "web_leads": "Često uzrokuje",
           "fell_back": "Još nije prevedeno, prikazano na jeziku {langs}: {fields}"},
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
           "says": "U logu piše:", "ask": "Možete li, molim vas, da proverite nod?",
           "confidence": "pouzdanost", "no_failure": "nije pronađena poznata greška", "scanned": "(pregledano linija: {n}).",
           "ended_job": "Nema poznate greške; job su završile ove linije:",
           "nothing": "Ništa u ovom logu ne odgovara poznatoj grešci GPU/HPC jobova. Ako je job ipak pao, "
                      "pošaljite {to}:",
           "send_what": "ceo log, skriptu joba i izlaz komande `troubleshoot probe --json` pokrenute unutar joba.",
           "to_url": "na {url}", "your_helpdesk": "vašoj podršci", "site_helpdesk": "helpdesk vašeg klastera", "finer": "Uži slučaj greške:",
           "site_docs": "korisničko uputstvo vašeg klastera", "supported": "Potvrđuju", "against": "Protiv toga",
           "also_full": "Pronađeno i (verovatno posledice ili sporedno):", "at_line": " u liniji {n}",
           "line_short": " (linija {n})", "more_findings": "... i još nalaza: {n} (troubleshoot --full)",
           "other_errors": "Ostale greške pri kraju loga:",
           "harmless": "Bezopasno, ništa ne treba preduzeti (ove linije izgledaju kao greške, ali nisu):",
           "still_stuck": "I dalje ne radi ili je ovo pogrešno? Pošaljite log na {url}", "fact": "podatak",
           "line_n": "linija {n}", "lines_n": "linije {n}",
           "web_how": "Kako popraviti", "web_more": "Ostala rešenja ({n})", "web_evidence": "Linije iz vašeg loga",
           "web_values": "Pronađene vrednosti", "web_facts": "Šta kažu podaci sonde", "web_confirms": "potvrđuje:",
           "web_against": "govori protiv:", "web_why": "Zašto se to dešava", "web_refs": "Više o tome",
           "web_confidence": "Pouzdanost", "web_site": "Ovo moraju da poprave administratori vašeg centra, ne vi.",
           "web_site_send": "Pošaljite im ovu stranicu (dugme “{button}” ispod), ID joba i ime noda.",
           "kl_raised_own": "Python je prijavio izuzetak {exc} u vašem kodu", "kl_at": " ({frame})",
           "kl_raised_lib": "Python je prijavio izuzetak {exc} unutar {package}",
           "kl_called": "; vaš kod ga je pozvao u {frame}",
           "kl_raised": "Python je prijavio izuzetak {exc}", "kl_a_library": "biblioteke",
           "kl_abort": "C++ biblioteka je prekinula program",
           "kl_crash": "proces se srušio (signal, ne Python izuzetak)",
           "kl_launcher": "pokretač prijavljuje koji je rank prvi pao",
           "kl_scheduler": "odluka raspoređivača o jobu",
           "kl_system": "šel ili sistem su odbili (nema fajla ili komande, nema dozvole, disk je pun)",
           "kl_error": "linija sa greškom pri kraju loga",
           "web_looks": "Kako to izgleda u logu", "web_leads": "Često izaziva",
           "fell_back": "Još nije prevedeno, prikazano na jeziku {langs}: {fields}"},
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
           "says": "로그 내용:", "ask": "노드를 확인해 주시겠습니까?",
           "confidence": "신뢰도", "no_failure": "알려진 오류 없음", "scanned": "({n}줄 검사함).",
           "ended_job": "알려진 오류는 없습니다. 다음 줄에서 작업이 끝났습니다:",
           "nothing": "이 로그에는 알려진 GPU/HPC 작업 오류와 일치하는 내용이 없습니다. 그래도 작업이 실패했다면 "
                      "다음을 보내세요 ({to}):",
           "send_what": "전체 로그, 작업 스크립트, 그리고 작업 안에서 실행한 `troubleshoot probe --json`의 출력.",
           "to_url": "{url}", "your_helpdesk": "헬프데스크", "site_helpdesk": "클러스터 헬프데스크", "finer": "다음 오류의 세부 사례:",
           "site_docs": "클러스터 사용자 안내서", "supported": "뒷받침하는 사실", "against": "반대되는 사실",
           "also_full": "함께 발견됨 (대개 앞의 오류로 생긴 부수적인 오류):", "at_line": " ({n}번째 줄)",
           "line_short": " ({n}번째 줄)", "more_findings": "... 그 밖의 발견 {n}개: troubleshoot --full",
           "other_errors": "로그 끝부분의 다른 오류:",
           "harmless": "무해함, 조치 필요 없음 (오류처럼 보이지만 오류가 아닌 줄):",
           "still_stuck": "아직 해결되지 않았거나 진단이 틀렸나요? 로그를 제출하세요: {url}", "fact": "사실",
           "line_n": "{n}번째 줄", "lines_n": "{n}번째 줄",
           "web_how": "해결 방법", "web_more": "다른 해결 방법 ({n}개)", "web_evidence": "로그 근거",
           "web_values": "찾은 값", "web_facts": "프로브 사실이 말해 주는 것", "web_confirms": "뒷받침:",
           "web_against": "반대:", "web_why": "발생 원인", "web_refs": "더 읽어보기",
           "web_confidence": "신뢰도", "web_site": "사용자가 아니라 사이트 관리자가 고쳐야 합니다.",
           "web_site_send": "이 페이지(아래의 “{button}” 사용), 작업 ID, 노드 이름을 관리자에게 보내세요.",
           "kl_raised_own": "사용자 코드에서 Python이 {exc}를 발생시켰습니다", "kl_at": " ({frame})",
           "kl_raised_lib": "Python이 {package} 안에서 {exc}를 발생시켰습니다",
           "kl_called": "; 사용자 코드가 {frame}에서 호출했습니다",
           "kl_raised": "Python이 {exc}를 발생시켰습니다", "kl_a_library": "라이브러리",
           "kl_abort": "C++ 라이브러리가 프로그램을 중단시켰습니다",
           "kl_crash": "프로세스가 비정상 종료되었습니다 (Python 예외가 아니라 시그널)",
           "kl_launcher": "런처가 가장 먼저 실패한 rank를 알려 줍니다",
           "kl_scheduler": "작업에 대한 스케줄러의 판정",
           "kl_system": "셸 또는 시스템이 거부했습니다 (파일이나 명령 없음, 권한 없음, 디스크 가득 참)",
           "kl_error": "로그 끝부분의 오류 줄",
           "web_looks": "로그에서 보이는 모습", "web_leads": "흔히 이어서 일어나는 오류",
           "fell_back": "아직 번역되지 않아 다른 언어({langs})로 표시: {fields}"},
}


LANG_NAMES = {"en": "English", "hr": "hrvatski", "sr": "srpski", "ko": "한국어", "sr-Cyrl": "српски"}


def label(lang, key, site=None):
    """One string of the message catalog in `lang`, along the same fallback chain as the entries
    (i18n.fallback_chain: sr <-> hr, a site's lang_fallbacks, then English); sr-Cyrl is the
    Serbian string transliterated (i18n.to_cyrillic: `code` and {placeholders} stay)."""
    return catalog_label(LABELS, lang, key, site)


def catalog_label(catalog, lang, key, site=None):
    """`key` of a {lang: {key: text}} catalog in `lang`, along the fallback chain described in
    label(); the web's own catalog (web/messages.py) uses it too."""
    if lang == "en" or not lang:
        return catalog["en"][key]
    from .i18n import CYRILLIC, fallback_chain, to_cyrillic
    for code in fallback_chain(lang, site):
        found = catalog.get("sr" if code == CYRILLIC else code, {}).get(key)
        if found:
            return to_cyrillic(found) if code == CYRILLIC else found
    return catalog["en"][key]


SHORT_FIXES = 3


def short_fixes(view):
    """The fixes of the first screen: the first 1-3 whose condition does not fail (view order)."""
    return tuple(f for f in view.fixes if f.held is not False)[:SHORT_FIXES]


def why_line(view):
    """One line of why: the first sentence of the first cause that fits this log (held first,
    never one whose condition is false), else of the summary."""
    likely = view.likely_causes
    text = " ".join((likely[0] if likely else view.summary).split())
    cut = SENTENCE_END.search(text)
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
    evidence = "\n".join(f"  {label(lang, 'line_n').format(n=e.line)}: {e.text}" if e.line else f"  {e.text}"
                         for e in view.evidence[:5])
    return "\n".join([
        label(lang, "subject").format(title=view.title, job=job), "",
        label(lang, "hello"),
        f"  {label(lang, 'job')}: {job}", f"  {label(lang, 'node')}: {node}", f"  {label(lang, 'time')}: {when}",
        f"  {label(lang, 'log')}: {diagnosis.source}", f"  {label(lang, 'diagnosis')}: {view.id} (troubleshoot)",
        label(lang, "says"), evidence, label(lang, "ask")])


def site_fix(view, diagnosis, lang="en"):
    from .view import FixView
    site = diagnosis.site or {}
    title = label(lang, "send").format(to=site.get("helpdesk_url") or site.get("helpdesk") or label(lang, "your_helpdesk"))
    return FixView(title=title, text="", code=None, held=True, scheduler=None), helpdesk_message(view, diagnosis, lang)


def _wrapped(head, text, width):
    """`head text` as lines of at most `width` columns (the head may carry colour codes)."""
    import textwrap
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
    tag = style(f"[{top.id}, {label(lang, 'confidence')} {top.confidence:.0%}]", "dim")
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
        where = f"{e.line:>{num}}" if e.line else label(lang, "fact").rjust(num)
        lines.append(f"  {style(where, 'dim')} | {_clip(e.text, room, e.span)}")
    more = len(top.fixes) - len(fixes)
    lines.append("")
    if more > 0:
        lines.append(style("  " + label(lang, "more" if more != 1 else "one_more").format(n=more, id=top.id), "dim"))
    for v in others[:3]:
        first = v.evidence[0] if v.evidence else None
        where = label(lang, "line_short").format(n=first.line) if first and first.line else ""
        lines.append(f"  {label(lang, 'also')} {v.title}{where}  (troubleshoot explain {v.id})")
    if len(others) > 3:
        lines.append(style("  " + label(lang, "more_findings").format(n=len(others) - 3), "dim"))
    lines += _fell_back(top, style, lang)
    lines += _after_findings(diagnosis, [top, *others], style, lang)
    return "\n".join(lines).rstrip("\n")


def human_full(diagnosis, style, lang="en"):
    """The fix first, then the evidence with line numbers."""
    lines = []
    if not diagnosis.findings:
        lines.append(f"{style(diagnosis.source, 'bold')}: {style(label(lang, 'no_failure'), 'green')} "
                     + label(lang, "scanned").format(n=diagnosis.lines))
        if diagnosis.key_lines:
            lines.append("")
            lines.append(style("  " + label(lang, "ended_job"), "bold"))
            lines += _key_lines(diagnosis.key_lines, style, lang)
        lines += _harmless(diagnosis, style, lang)
        if diagnosis.key_lines or diagnosis.harmless:
            lines.append("")
        lines.append("  " + label(lang, "nothing").format(to=_helpdesk(diagnosis.site, lang)))
        lines.append("  " + label(lang, "send_what"))
        return "\n".join(lines)
    views = diagnosis.views(lang)
    top, *others = views
    tag = style(f"[{top.id}, {label(lang, 'confidence')} {top.confidence:.0%}]", "dim")
    lines.append(f"{style(diagnosis.source, 'bold')}: {style(top.title, 'red', 'bold')}  {tag}")
    lines.append(f"  {top.summary}")
    if top.refines:
        lines.append(style(f"  {label(lang, 'finer')} {', '.join(top.refines)}", "dim"))
    if who_acts(top, lang):
        lines.append("  " + style(who_acts(top, lang), "yellow", "bold"))
    if top.values:
        lines.append(f"  {label(lang, 'found')} " + ", ".join(f"{k} = {v}" for k, v in top.shown_values or top.values))
    lines.append("")
    lines.append(style(f"  {label(lang, 'how')}", "bold"))
    lines += render_fixes(top.fixes, style, "  ", lang=lang)
    if top.causes:
        lines.append("")
        lines.append(style(f"  {label(lang, 'why_long')}", "bold"))
        held = top.causes_held or (None,) * len(top.causes)
        lines += [f"  - {c}" + (style(f"  ({label(lang, 'not_this_job')})", "dim") if h is False else "")
                  for c, h in zip(top.causes, held)]
    lines.append("")
    lines.append(style(f"  {label(lang, 'evidence')}", "bold"))
    width = len(str(max((e.line for e in top.evidence), default=0)))
    for e in top.evidence:
        where = f"{e.line:>{width}}" if e.line else label(lang, "fact").rjust(width)
        lines.append(f"  {style(where, 'dim')} | {_clip(e.text)}")
    for heading, items in ((label(lang, "supported"), top.confirmed_by), (label(lang, "against"), top.ruled_out_by)):
        if items:
            lines.append(f"  {heading}: " + "; ".join(items))
    if others:
        lines.append("")
        lines.append(style(f"  {label(lang, 'also_full')}", "bold"))
        for v in others:
            first = v.evidence[0] if v.evidence else None
            where = label(lang, "at_line").format(n=first.line) if first and first.line else ""
            lines.append(f"  - {v.title} [{v.id}, {v.confidence:.0%}]{where}  (troubleshoot explain {v.id})")
    lines += _fell_back(top, style, lang)
    lines += _after_findings(diagnosis, views, style, lang)
    return "\n".join(lines)


def _fell_back(view, style, lang):
    """One dim line naming the fields of the top finding shown in another language (untranslated
    yet, or stale since the English changed); the JSON lists them as `fallback_fields`."""
    if lang == "en" or not view.fallback_fields:
        return []
    from .i18n import fallback_chain
    langs = [c for c in fallback_chain(lang) if c != lang]
    names = ", ".join(LANG_NAMES.get(c, c) for c in langs)
    return ["", style("  " + label(lang, "fell_back").format(langs=names, fields=", ".join(view.fallback_fields)),
                      "dim")]


def _after_findings(diagnosis, views, style, lang="en"):
    """Below the findings, in the short and the full output alike: the key lines
    no finding shows (other errors), the harmless lines, and where to ask for help
    when the site says."""
    shown = {e.line for v in views for e in v.evidence}
    other_errors = [k for k in diagnosis.key_lines if k.line not in shown]
    lines = []
    if other_errors:
        lines.append("")
        lines.append(style(f"  {label(lang, 'other_errors')}", "bold"))
        lines += _key_lines(other_errors, style, lang)
    lines += _harmless(diagnosis, style, lang)
    if diagnosis.site.get("helpdesk_url"):
        lines.append("")
        lines.append(style("  " + label(lang, "still_stuck").format(url=diagnosis.site["helpdesk_url"]), "dim"))
    return lines


def _harmless(diagnosis, style, lang="en"):
    """The known noise in the log (entries of severity harmless), one line each, dim: so that
    a reader who sees "E ... Unable to register cuDNN factory" knows it is not the failure."""
    views = diagnosis.harmless_views(lang)
    if not views:
        return []
    out = ["", style(f"  {label(lang, 'harmless')}", "bold")]
    for v in views:
        numbers = [e.line for e in v.evidence if e.line]
        where = ", ".join(map(str, numbers[:5])) + (", ..." if len(numbers) > 5 else "")
        out.append(style(f"  - {v.title} ({label(lang, 'line_n' if len(numbers) == 1 else 'lines_n').format(n=where)})  (troubleshoot explain {v.id})",
                         "dim"))
    return out


def _helpdesk(site, lang="en"):
    url = site.get("helpdesk_url")
    return label(lang, "to_url").format(url=url) if url else f"{site.get('helpdesk') or label(lang, 'your_helpdesk')}"


def _key_lines(keys, style, lang="en"):
    """The lines that most likely ended the job (keylines.KeyLine), with what can be said of each."""
    width = len(str(max((k.line for k in keys), default=0)))
    out = []
    for k in keys:
        out.append(f"  {style(f'{k.line:>{width}}', 'dim')} | {_clip(k.text)}")
        out.append(f"  {' ' * width}   {style(key_line_explanation(k, lang), 'yellow')}")
    return out


def key_line_explanation(k, lang="en"):
    """keylines.KeyLine.explanation in the reader's language (English: the KeyLine's own words)."""
    if lang == "en":
        return k.explanation
    if k.kind == "exception":
        if k.origin == "your code":
            return label(lang, "kl_raised_own").format(exc=k.exception) + (
                label(lang, "kl_at").format(frame=k.frame) if k.frame else "")
        if k.origin == "a library":
            called = label(lang, "kl_called").format(frame=k.frame) if k.frame else ""
            return label(lang, "kl_raised_lib").format(exc=k.exception,
                                                        package=k.package or label(lang, "kl_a_library")) + called
        return label(lang, "kl_raised").format(exc=k.exception)
    return label(lang, {"abort": "kl_abort", "crash": "kl_crash", "launcher": "kl_launcher",
                        "scheduler": "kl_scheduler", "system": "kl_system"}.get(k.kind, "kl_error"))


def explain(entry, site, lang="en", style=None):
    """One entry for a human, like `rustc --explain`."""
    style = style or Style(False)
    view = entry_view(entry, lang, site)
    out = [style(f"{view.id}: {view.title}", "bold"), "", view.summary]
    if view.refines:
        out.append(style(f"{label(lang, 'finer')} {', '.join(view.refines)}", "dim"))
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
    import json  # only for --json: start-up time
    return json.dumps(document, ensure_ascii=False)
