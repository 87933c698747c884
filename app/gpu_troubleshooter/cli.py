"""`troubleshoot`: the command line over the engine.

    troubleshoot FILE...            diagnose logs (globs, '-' for stdin, .gz)
    troubleshoot kb validate [DIR]  check entries and their examples
    troubleshoot kb list [--json]   list the entries
    troubleshoot explain ID         one entry for a human
    troubleshoot probe [--json]     check this node: GPU node? allocated? seen? used?
    troubleshoot job JOBID          a batch job: scheduler record + its output files
    troubleshoot check job.sh       a batch script before submitting it
    troubleshoot serve | staff | db the web service (needs the `web` extra)

Exit status: 0 no known failure, 1 a failure diagnosed, 2 usage or input error.
Start-up stays fast: no torch, pynvml or Flask import on these paths.
"""
import argparse
import glob
import os
import sys

from .errors import TroubleshootError

EXIT_CLEAN, EXIT_FOUND, EXIT_ERROR = 0, 1, 2
SUBCOMMANDS = {}


def subcommand(name):
    def register(fn):
        SUBCOMMANDS[name] = fn
        return fn
    return register


def _use_colour(choice, stream):
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return stream.isatty()


def _language(asked, site=None):
    """The language to answer in: --lang, else $TROUBLESHOOT_LANG (clusters often force
    LANG=en_US.UTF-8 in their profiles; this changes only our answers), else LC_ALL /
    LC_MESSAGES / LANG (as gettext reads them), else the site's `default_lang` (_site.yaml),
    negotiated with Babel against the translated languages (i18n.choose_language); English
    costs no import."""
    wanted = asked or next((os.environ[k] for k in ("TROUBLESHOOT_LANG", "LC_ALL", "LC_MESSAGES", "LANG")
                            if os.environ.get(k)), "")
    base = wanted.split("_")[0].split("-")[0].split(".")[0].lower()
    if base == "en" or base in ("", "c", "posix") and not (site or {}).get("default_lang"):
        return "en"
    from .i18n import choose_language
    return choose_language(asked, os.environ, site)


def _load_kb(extra_dirs):
    from .knowledge import load_knowledge_base
    kb = load_knowledge_base(extra_dirs)
    for problem in kb.problems:
        print(f"troubleshoot: warning: knowledge base: {problem}", file=sys.stderr)
    return kb


def _expand(paths):
    out = []
    for p in paths:
        if p != "-" and not os.path.exists(p) and glob.has_magic(p):
            matched = sorted(glob.glob(p))
            out += matched or [p]
        else:
            out.append(p)
    return out


class _VersionAction(argparse.Action):
    """--version, reading the installed version only when asked (importlib.metadata is slow to import)."""

    def __call__(self, parser, namespace, values, option_string=None):
        from . import __version__
        print(f"troubleshoot {__version__}")
        parser.exit()


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's own, given the terminal's width as it would find it: its way imports shutil
    (with bz2 and lzma) on every add_argument, which is start-up time."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        if width is None:
            from .text import terminal_columns
            width = terminal_columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)


def diagnose_parser():
    p = argparse.ArgumentParser(
        prog="troubleshoot", formatter_class=_HelpFormatter,
        description="Diagnose a failed GPU/ML job from its log: which known failure it shows, and how to fix it.",
        epilog="Other commands: troubleshoot probe (check this node), troubleshoot explain ID, "
               "troubleshoot kb validate|list, troubleshoot serve|staff|db (web service). "
               "Exit status: 0 no known failure, 1 failure diagnosed, 2 usage or input error.")
    p.add_argument("files", nargs="+", metavar="FILE", help="job log(s): plain, .gz, .bz2, .xz, a glob such as 'slurm-*.out', or - for stdin")
    p.add_argument("--version", action=_VersionAction, nargs=0, help="print the version and exit")
    p.add_argument("--json", action="store_true", help="one JSON object per file on stdout (schema 1)")
    p.add_argument("--kb", action="append", default=[], metavar="DIR", help="extra knowledge-base folder (adds or overrides entries)")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.add_argument("--lang", default=None, metavar="LANG",
                   help="language of titles, causes and fixes: en, hr, sr, sr-Cyrl, ko (default: from TROUBLESHOOT_LANG, then "
                        "LC_ALL/LC_MESSAGES/LANG, then the site's default_lang; untranslated text falls back to a "
                        "sibling language, then English)")
    p.add_argument("--full", action="store_true", help="print every fix, cause and finding, not the short first screen")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--facts", metavar="FILE", help="facts JSON from `troubleshoot probe --json`, to confirm or rule out findings")
    where.add_argument("--probe", action="store_true", help="run the node probe here first and use its facts (like --facts)")
    return p


def run_diagnose(argv):
    parser = diagnose_parser()
    args = parser.parse_args(argv)
    if args.files.count("-") > 1:
        parser.error("'-' (standard input) can be read only once")
    try:
        kb = _load_kb(args.kb)
        facts = _read_facts(args.facts) if args.facts else None
        if args.probe:
            from .probes.node_probe import collect
            facts = collect()
    except TroubleshootError as e:
        print(f"troubleshoot: {e}", file=sys.stderr)
        return EXIT_ERROR
    from .engine import diagnose_path
    from .findings import JSON_SCHEMA_VERSION
    from .render import Style, as_json, human
    style = Style(_use_colour(args.color, sys.stdout))
    lang = _language(args.lang, kb.site)
    status = EXIT_CLEAN
    files = _expand(args.files)
    for n, path in enumerate(files):
        try:
            diagnosis = diagnose_path(path, kb, facts=facts)
        except TroubleshootError as e:
            print(f"troubleshoot: {e}", file=sys.stderr)
            if args.json:
                print(as_json({"schema": JSON_SCHEMA_VERSION, "source": path, "error": str(e), "findings": []}))
            status = EXIT_ERROR
            continue
        for warning in diagnosis.context.get("warnings", ()):
            print(f"troubleshoot: warning: {warning}", file=sys.stderr)
        if args.json:
            print(as_json(diagnosis.to_dict(lang)))
        else:
            if n:
                print()
            print(human(diagnosis, style, lang, full=args.full))
        if diagnosis.findings and status != EXIT_ERROR:
            status = EXIT_FOUND
    return status


def _read_facts(path):
    import json
    from .errors import LogInputError
    try:
        with open(path, encoding="utf-8") as f:
            facts = json.load(f)
    except OSError as e:
        raise LogInputError(f"{path}: cannot read facts file: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise LogInputError(f"{path}: not a facts JSON file (line {e.lineno}: {e.msg}); make it with `troubleshoot probe --json > facts.json`") from None
    if not isinstance(facts, dict):
        raise LogInputError(f"{path}: a facts file holds one JSON object")
    return facts


@subcommand("kb")
def run_kb(argv):
    p = argparse.ArgumentParser(prog="troubleshoot kb", description="Work with the knowledge base.")
    sub = p.add_subparsers(dest="action", required=True)
    v = sub.add_parser("validate", help="check every entry and its examples; problems as FILE:LINE: message")
    v.add_argument("dir", nargs="?", help="a site folder of entries to check (default: the bundled knowledge base)")
    v.add_argument("--no-examples", action="store_true", help="check the entries only, not their example logs")
    ls = sub.add_parser("list", help="list the entries")
    ls.add_argument("--json", action="store_true")
    ls.add_argument("--kb", action="append", default=[], metavar="DIR")
    args = p.parse_args(argv)
    if args.action == "validate":
        from .validate import validate
        problems, summary = validate(args.dir, check_examples=not args.no_examples)
        for problem in problems:
            print(problem)
        errors = [p for p in problems if not p.warning]
        warnings = len(problems) - len(errors)
        summary += f", {warnings} warning(s)" if warnings else ""
        print(summary if not errors else f"{len(errors)} problem(s); {summary}", file=sys.stderr if errors else sys.stdout)
        return 1 if errors else 0
    try:
        kb = _load_kb(args.kb)
    except TroubleshootError as e:
        print(f"troubleshoot: {e}", file=sys.stderr)
        return EXIT_ERROR
    rows = [{"id": e.id, "title": e.title.get(), "area": e.area, "tags": list(e.tags), "severity": e.severity,
             "actor": e.actor, "refines": e.refines, "draft": e.draft, "path": e.path} for e in kb.entries]
    if args.json:
        import json
        print(json.dumps(rows, ensure_ascii=False, indent=1))
    else:
        width = max((len(r["id"]) for r in rows), default=0)
        for r in rows:
            print(f"{r['id']:<{width}}  {r['title']}")
    return 0


@subcommand("explain")
def run_explain(argv):
    p = argparse.ArgumentParser(prog="troubleshoot explain", description="Show one knowledge-base entry: causes and fixes.")
    p.add_argument("id")
    p.add_argument("--kb", action="append", default=[], metavar="DIR")
    p.add_argument("--lang", default=None, help="en, hr, sr, sr-Cyrl or ko (default: from TROUBLESHOOT_LANG, then LC_ALL/LC_MESSAGES/LANG, then the "
                        "site's default_lang)")
    args = p.parse_args(argv)
    try:
        kb = _load_kb(args.kb)
    except TroubleshootError as e:
        print(f"troubleshoot: {e}", file=sys.stderr)
        return EXIT_ERROR
    entry = kb.get(args.id)
    if entry is None:
        from rapidfuzz import process
        guess = process.extractOne(args.id, [e.id for e in kb.entries])
        hint = f" Did you mean '{guess[0]}'?" if guess and guess[1] > 60 else ""
        print(f"troubleshoot: no entry '{args.id}'.{hint} `troubleshoot kb list` lists them.", file=sys.stderr)
        return EXIT_ERROR
    from .render import Style, explain
    print(explain(entry, kb.site, _language(args.lang, kb.site), Style(_use_colour("auto", sys.stdout))))
    return 0


def _web_subcommand(name):
    """serve/staff/db live in the web package; Flask is imported only when one runs."""
    def run(argv):
        try:
            from .web.manage import main as web_main
        except ImportError as e:
            print(f"troubleshoot {name}: the web service is not installed ({e.name}): pip install '.[web]'", file=sys.stderr)
            return EXIT_ERROR
        return web_main([name, *argv])
    return run


for _name in ("serve", "staff", "db"):
    SUBCOMMANDS[_name] = _web_subcommand(_name)
@subcommand("probe")
def run_probe(argv):
    """The node probe (probes/node_probe.py) plus what the knowledge base makes of its facts alone."""
    from .probes import node_probe
    p = node_probe.build_parser("troubleshoot probe")
    p.add_argument("--kb", action="append", default=[], metavar="DIR", help="extra knowledge-base folder")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    args = p.parse_args(argv)
    if args.pid is not None and not args.sample:
        p.error("--pid needs --sample SECONDS")
    facts = node_probe.collect_from_args(args)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(node_probe.to_json(facts) + "\n")
    if args.json:
        print(node_probe.to_json(facts))
        return EXIT_CLEAN
    colour = _use_colour(args.color, sys.stdout)
    print(node_probe.render(facts, color=colour))
    found = _facts_alone(facts, args.kb)
    if found:
        print()
        print("Known failures these facts show on their own (no log needed):")
        for title, fid, why in found:
            print(f"  - {fid}: {title}")
            print(f"      because {why}")
            print(f"      `troubleshoot explain {fid}` for the fixes")
    return EXIT_FOUND if found else EXIT_CLEAN


def _facts_alone(facts, extra_dirs):
    """(title, id, because) of the KB entries whose `alone` fact rules hold."""
    try:
        from .knowledge import load_knowledge_base
        from .engine import diagnose_text
        kb = load_knowledge_base(extra_dirs)
        d = diagnose_text("troubleshoot probe: facts only, no job log\n", kb, source="probe", facts=facts)
    except Exception as e:  # the ladder is already printed; the KB is a bonus here
        print(f"troubleshoot: note: knowledge base not consulted: {e}", file=sys.stderr)
        return []
    return [(v.title, v.id, "; ".join(v.confirmed_by)) for v in d.views()]


@subcommand("job")
def run_job(argv):
    """A batch job: the scheduler's record joined with its log (scheduler/job.py)."""
    from .scheduler.job import main as job_main
    return job_main(argv, _use_colour, _load_kb)


@subcommand("check")
def run_check(argv):
    """A batch script before submission (scheduler/check.py)."""
    from .scheduler.check import main as check_main
    return check_main(argv, _use_colour, _load_kb)


@subcommand("epilog")
def run_epilog(argv):
    """The Slurm/PBS epilog hook (scheduler/epilog.py); always exits 0."""
    from .scheduler.epilog import main as epilog_main
    return epilog_main(argv)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in SUBCOMMANDS:
            return SUBCOMMANDS[argv[0]](argv[1:])
        return run_diagnose(argv)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `troubleshoot big.log | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_CLEAN


if __name__ == "__main__":
    sys.exit(main())
