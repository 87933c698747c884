"""Secret redaction for job logs, applied before a log is stored or shown.

Pure standard library; the web app imports it before anything is written.

    from gpu_troubleshooter.redact import redact_text, redact_lines, StreamRedactor

    result = redact_text(log_text)          # small texts
    result.text, result.counts              # counts: kind -> number replaced

    for line in redact_lines(fileobj):      # multi-GB logs, flat memory
        out.write(line)

    r = StreamRedactor()                    # streaming with counts
    for line in fileobj:
        out.write(r.redact_line(line))
    r.counts

Every secret is replaced by ``[REDACTED:<kind>]``.  Key names, header names,
URL schemes, user names and hosts are kept so the log stays useful:
``password=[REDACTED:password]``, ``Authorization: Bearer [REDACTED:bearer]``,
``https://user:[REDACTED:url-credentials]@host/``.

Line structure is preserved: every input line gives exactly one output line
with the same line ending, so line numbers in diagnoses stay valid.  Lines
inside a multi-line private key block come out empty.

Regex safety: every pattern uses bounded repetitions over character classes
and no nested unbounded quantifiers, so the cost per line is linear in its
length (times a small constant bound); see tests/test_redact.py for the
adversarial-input guard.  See docs/redaction.md for what is and is not caught.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Dict, Iterable, Iterator, List, Mapping, Optional, TextIO, Tuple

__all__ = [
    "KINDS",
    "PRIVATE_KEY_MAX_LINES",
    "RedactionResult",
    "Rule",
    "RULES",
    "StreamRedactor",
    "redact_lines",
    "redact_stream",
    "redact_text",
]

#: A private key block that has no END line stops being suppressed after this
#: many lines (or earlier, at the first line that does not look like PEM body
#: text), so an unterminated BEGIN cannot swallow the rest of the log.  400
#: lines covers a 16384-bit RSA key (about 200 lines) and PGP key blocks with
#: several subkeys.
PRIVATE_KEY_MAX_LINES = 400

_MARK = "[REDACTED:{}]"
_NOT_DONE = r"(?!\[REDACTED:)"   # never re-redact a replacement


def _mark(kind: str) -> str:
    return _MARK.format(kind)


@dataclass(frozen=True)
class RedactionResult:
    text: str
    counts: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def total(self) -> int:
        return sum(self.counts.values())


# ---------------------------------------------------------------------------
# Value heuristics for key=value style rules
# ---------------------------------------------------------------------------

_PLACEHOLDERS = frozenset(
    """none null nil true false yes no undefined empty redacted hidden masked
    auto required optional default unset missing invalid expired env
    secret password token""".split()
)
_CODE_REF = re.compile(r"[a-z_][A-Za-z0-9_]{0,63}(?:\.[A-Za-z_][A-Za-z0-9_]{0,63}){1,8}")
_TOKENIZER_KEYS = re.compile(
    r"(?:pad|eos|bos|unk|sep|cls|mask|start|end|stop|image|video|audio|special|"
    r"decoder_start|additional_special|boi|eoi|think|im_start|im_end)_token$"
)
_DIGIT = re.compile(r"[0-9]")


def _is_placeholder(value: str) -> bool:
    v = value.strip()
    if not v:
        return True
    if v.lower() in _PLACEHOLDERS:
        return True
    if set(v) <= set("*xX.#-_"):
        return True                      # ****, xxxx, ...
    if v[0] in "$%<" or v.startswith("{{"):
        return True                      # $VAR, ${VAR}, %(x)s, <your-token>, {{ tmpl }}
    return False


def _key_before(string: str, start: int) -> str:
    """Identifier characters directly before ``start`` (the full key prefix)."""
    i = start
    lo = max(0, start - 64)
    while i > lo and (string[i - 1].isalnum() or string[i - 1] in "_.-"):
        i -= 1
    return string[i:start]


def _family(keyword: str) -> str:
    k = keyword.lower().replace("-", "_")
    if k.startswith("pass") or k == "pwd":
        return "password"
    if k.startswith("secret"):
        return "secret"
    if k == "token":
        return "token"
    return "api-key"


def _value_is_secret(family: str, full_key: str, keyword: str, value: str, strict: bool) -> bool:
    """Decide whether ``value`` assigned to ``full_key`` should be redacted.

    ``strict`` is set for ``key: value`` with unquoted key and value, the form
    that also occurs in prose ("failed to refresh token: HTTPError").
    """
    if _is_placeholder(value) or _CODE_REF.fullmatch(value):
        return False
    if family == "password":
        if keyword.lower() == "pwd" and (full_key in ("PWD", "OLDPWD") or value[0] in "/~"):
            return False                 # the shell's working directory
        return True
    if _TOKENIZER_KEYS.search(full_key.lower()):
        return False                     # pad_token=<pad>, eos_token: </s>
    if value.isdigit():
        return False                     # max_token=512
    if strict:
        return (len(value) >= 8 and bool(_DIGIT.search(value))) or len(value) >= 20
    return True


# ---------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------

Replacer = Callable[["re.Match[str]"], Optional[str]]


@dataclass(frozen=True)
class Rule:
    """One pattern.  ``replace`` returns the replacement text or None to keep."""

    kind: str                  # the kind counted (rules with varying kinds: the main one)
    regex: "re.Pattern[str]"
    replace: Replacer
    hints: Tuple[str, ...]     # lower-case literals; a match always contains one
    kinds: Tuple[str, ...] = ()  # every kind this rule can report (default: (kind,))
    # Exact strings that start a match, for the backtracking guard in the
    # tests (a trigger followed by a long run of one character).
    probes: Tuple[str, ...] = ()

    def all_kinds(self) -> Tuple[str, ...]:
        return self.kinds or (self.kind,)

    def all_probes(self) -> Tuple[str, ...]:
        return self.probes or self.hints


def _whole(kind: str) -> Replacer:
    mark = _mark(kind)
    return lambda m: mark


def _keep_prefix(kind: str, group: int = 1) -> Replacer:
    """Keep group ``group`` (the key / header / scheme), redact the rest."""
    mark = _mark(kind)
    return lambda m: m.group(group) + mark


def _keep_around(kind: str) -> Replacer:
    """Keep groups 1 and 3, redact group 2."""
    mark = _mark(kind)
    return lambda m: m.group(1) + mark + (m.group(3) or "")


def _needs_digit(kind: str, group: int = 2) -> Replacer:
    mark = _mark(kind)

    def repl(m: "re.Match[str]") -> Optional[str]:
        if not _DIGIT.search(m.group(group)):
            return None
        return m.group(1) + mark
    return repl


def _url_token_user(m: "re.Match[str]") -> Optional[str]:
    user = m.group(2)
    if not _DIGIT.search(user) or user.isdigit():
        return None                      # a plain user name: https://alice.smith@host
    return m.group(1) + _mark("url-credentials") + m.group(3)


def _curl_user(m: "re.Match[str]") -> Optional[str]:
    if m.group(2).isdigit() or _is_placeholder(m.group(2)):
        return None                      # uid:gid, or $PASS
    return m.group(1) + _mark("password")


def _email(m: "re.Match[str]") -> Optional[str]:
    local = m.group(1).lower()
    if local in ("git", "hg", "svn"):    # git@github.com:org/repo.git is a remote, not a person
        return None
    if m.string[max(0, m.start() - 3):m.start()] == "://":
        return None                      # https://user@host: user name kept, host kept
    return _mark("email")


_KEYWORDS = r"pass(?:word|wd|phrase)|pwd|secret(?:[_-]?key)?|token|api[_-]?key|access[_-]?key"
_UNQUOTED = r"[^\s\"'`,;&()<>\[\]{}|]{1,1024}"
# a value: "double quoted", 'single quoted', "unterminated, or bare; never an
# earlier replacement
_VALUE = (r"(?:\"" + _NOT_DONE + r"(?P<dq>[^\"\r\n]{1,1024})\"|'" + _NOT_DONE + r"(?P<sq>[^'\r\n]{1,1024})'"
          r"|[\"']" + _NOT_DONE + r"(?P<oq>[^\"'\s]{1,1024})|" + _NOT_DONE + r"(?P<val>(?![=:>])" + _UNQUOTED + r"))")


def _value_of(m: "re.Match[str]") -> Tuple[str, str]:
    """(value, group name) of a match built with _VALUE."""
    for name in ("dq", "sq", "oq", "val"):
        v = m.group(name)
        if v is not None:
            return v, name
    raise AssertionError("no value group")


def _replace_value(m: "re.Match[str]", name: str, mark: str) -> str:
    """The match text from its start to its value, the mark, then any closing quote."""
    head = m.string[m.start():m.start(name)]
    tail = m.string[m.end(name):m.end()]
    return head + mark + tail


def _kv(m: "re.Match[str]") -> Optional[str]:
    keyword = m.group("key")
    full_key = _key_before(m.string, m.start()) + keyword
    sep = m.group("sep")
    value, name = _value_of(m)
    quoted_key = sep[:1] in ("\"", "'")
    strict = name == "val" and ":" in sep and "=" not in sep and not quoted_key
    family = _family(keyword)
    if not _value_is_secret(family, full_key, keyword, value, strict):
        return None
    return _replace_value(m, name, _mark(family))


def _cli_flag(m: "re.Match[str]") -> Optional[str]:
    keyword = m.group("key")
    value, name = _value_of(m)
    family = _family(keyword)
    if not _value_is_secret(family, m.group(1).lstrip("-"), keyword, value, strict=False):
        return None
    return _replace_value(m, name, _mark(family))


def _c(pattern: str, flags: int = 0) -> "re.Pattern[str]":
    return re.compile(pattern, flags)


_I = re.IGNORECASE

#: Applied in this order to each line (outside private key blocks).  Earlier
#: rules win: a token inside an Authorization header counts as ``bearer``.
RULES: Tuple[Rule, ...] = (
    # scheme://user:password@host -> keep scheme, user and host
    Rule("url-credentials",
         _c(r"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/?#@\"'<>\[\]]{0,256}:)"
            + _NOT_DONE + r"([^\s/?#@\"'<>]{1,1024})(@)"),
         _keep_around("url-credentials"), ("://",), probes=("https://", "https://user:")),
    # scheme://<token>@host (a token used as the user name)
    Rule("url-credentials",
         _c(r"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{1,20}://)" + _NOT_DONE
            + r"([A-Za-z0-9_.~%+-]{16,256})(@)"),
         _url_token_user, ("://",), probes=("https://",)),
    Rule("slack-webhook",
         _c(r"(https?://hooks\.slack\.com/(?:services|workflows|triggers)/)([A-Za-z0-9+/_-]{8,300})", _I),
         _keep_prefix("slack-webhook"), ("hooks.slack.com",), probes=("https://hooks.slack.com/services/",)),
    # SLURM_JWT=eyJ... (scontrol token) and the slurmrestd header
    Rule("slurm-jwt",
         _c(r"((?:\bSLURM_JWT|\bX-SLURM-USER-TOKEN)[\"']?[ \t]{0,8}[=:][ \t]{0,8}[\"']?)" + _NOT_DONE
            + r"([A-Za-z0-9._-]{8,16384})", _I),
         _keep_prefix("slurm-jwt"), ("slurm_jwt", "x-slurm-user-token"), probes=("SLURM_JWT=", "X-SLURM-USER-TOKEN: ")),
    Rule("basic-auth",
         _c(r"(\bAuthorization[\"']?[ \t]{0,8}[:=][ \t]{0,8}[\"']?Basic[ \t]{1,8})" + _NOT_DONE
            + r"([A-Za-z0-9+/]{4,4096}={0,2})", _I),
         _keep_prefix("basic-auth"), ("basic",), probes=("Authorization: Basic ",)),
    Rule("bearer",
         _c(r"(\bAuthorization[\"']?[ \t]{0,8}[:=][ \t]{0,8}[\"']?Bearer[ \t]{1,8})" + _NOT_DONE
            + r"([A-Za-z0-9._~+/-]{1,16384}={0,2})", _I),
         _keep_prefix("bearer"), ("bearer",), probes=("Authorization: Bearer ",)),
    # Authorization: token ghp_..., Authorization: <raw key>
    Rule("authorization",
         _c(r"(\bAuthorization[\"']?[ \t]{0,8}[:=][ \t]{0,8}[\"']?(?:(?:token|bot|apikey|sso-key)[ \t]{1,8})?)"
            + r"(?!\[REDACTED:|Bearer\b|Basic\b)([A-Za-z0-9._~+/=:-]{8,8192})", _I),
         _needs_digit("authorization"), ("authorization",), probes=("Authorization: ", "Authorization: token ")),
    Rule("github-fine-grained-pat",
         _c(r"github_pat_(?<![A-Za-z0-9_]github_pat_)[A-Za-z0-9_]{60,250}"),
         _whole("github-fine-grained-pat"), ("github_pat_",)),
    # ghp_ personal, gho_ OAuth, ghu_ user-to-server, ghs_ server-to-server, ghr_ refresh
    Rule("github-token",
         _c(r"gh(?<![A-Za-z0-9_]gh)[pousr]_[A-Za-z0-9]{36,251}"),
         _whole("github-token"), ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), probes=("ghp_",)),
    Rule("gitlab-token",
         _c(r"gl(?<![A-Za-z0-9_-]gl)(?:pat|dt|rt|ptt|ft|imt|agent|oas|soat|cbt|ffct)-"
            r"[A-Za-z0-9_.-]{20,300}"),
         _whole("gitlab-token"),
         ("glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glimt-", "glagent-", "gloas-", "glsoat-", "glcbt-",
          "glffct-"), probes=("glpat-", "glrt-")),
    Rule("huggingface-token",
         _c(r"(?<![A-Za-z0-9_])(?:hf_|api_org_)[A-Za-z0-9]{30,64}(?![A-Za-z0-9_])"),
         _whole("huggingface-token"), ("hf_", "api_org_")),
    Rule("aws-access-key-id",
         _c(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])"),
         _whole("aws-access-key-id"), ("akia", "asia", "abia", "acca", "a3t"), probes=("AKIA", "A3T")),
    Rule("aws-secret-access-key",
         _c(r"((?:aws_?)?secret_?(?:access_?)?key[\"']?[ \t]{0,8}(?:=|:)[ \t]{0,8}[\"']?)" + _NOT_DONE
            + r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", _I),
         _keep_prefix("aws-secret-access-key"), ("secret",), probes=("aws_secret_access_key=", "secret_key: \"")),
    Rule("anthropic-api-key",
         _c(r"sk-ant-(?<![A-Za-z0-9_-]sk-ant-)[A-Za-z0-9_-]{20,300}"),
         _whole("anthropic-api-key"), ("sk-ant-",)),
    Rule("openai-api-key",
         _c(r"sk-(?<![A-Za-z0-9_-]sk-)(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,400}|[A-Za-z0-9]{32,200})"),
         _whole("openai-api-key"), ("sk-",), probes=("sk-", "sk-proj-")),
    Rule("slack-token",
         _c(r"x(?<![A-Za-z0-9_-]x)(?:ox[abposre]|app)-[A-Za-z0-9-]{10,250}"),
         _whole("slack-token"), ("xox", "xapp-"), probes=("xoxb-", "xapp-")),
    Rule("google-api-key",
         _c(r"AIza(?<![A-Za-z0-9_-]AIza)[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),
         _whole("google-api-key"), ("aiza",), probes=("AIza",)),
    Rule("stripe-key",
         _c(r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,247}"),
         _whole("stripe-key"), ("sk_", "rk_"), probes=("sk_live_",)),
    Rule("npm-token",
         _c(r"npm_(?<![A-Za-z0-9_]npm_)[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
         _whole("npm-token"), ("npm_",)),
    Rule("pypi-token",
         _c(r"pypi-AgE(?<![A-Za-z0-9_-]pypi-AgE)[A-Za-z0-9_-]{40,4096}"),
         _whole("pypi-token"), ("pypi-",), probes=("pypi-AgE",)),
    Rule("azure-storage-key",
         _c(r"((?:AccountKey|SharedAccessKey)[ \t]{0,4}=[ \t]{0,4})" + _NOT_DONE
            + r"([A-Za-z0-9+/]{20,200}={0,2})", _I),
         _keep_prefix("azure-storage-key"), ("accountkey", "sharedaccesskey"), probes=("AccountKey=",)),
    Rule("azure-sas-signature",
         _c(r"([?&;]sig=)" + _NOT_DONE + r"([A-Za-z0-9%+/]{20,300}={0,2})", _I),
         _keep_prefix("azure-sas-signature"), ("sig=",), probes=("&sig=",)),
    # ~/.docker/config.json: "auths": {"registry": {"auth": "<base64 user:password>"}} and identity tokens
    Rule("docker-auth",
         _c(r"(\"(?:auth|identitytoken|registrytoken)\"[ \t]{0,8}:[ \t]{0,8}\")" + _NOT_DONE
            + r"([A-Za-z0-9+/._-]{8,8192}={0,2})(\")", _I),
         _keep_around("docker-auth"), ("\"auth\"", "identitytoken", "registrytoken"), probes=('"auth": "',)),
    # ~/.kaggle/kaggle.json: {"username": "...", "key": "<32 hex>"}
    Rule("kaggle-key",
         _c(r"(\"key\"[ \t]{0,8}:[ \t]{0,8}\")" + _NOT_DONE + r"([0-9a-f]{32})(\")", _I),
         _keep_around("kaggle-key"), ("\"key\"",), probes=('"key": "',)),
    # Slurm's MUNGE key, when a prolog or a debug dump prints it
    Rule("munge-key",
         _c(r"(\bMUNGE_KEY[\"']?[ \t]{0,8}[=:][ \t]{0,8}[\"']?)" + _NOT_DONE + r"([A-Za-z0-9+/=_-]{8,16384})", _I),
         _keep_prefix("munge-key"), ("munge_key",), probes=("MUNGE_KEY=",)),
    # docker login -u user -p <password> (the long --password form is the CLI-flag rule below)
    Rule("password",
         _c(r"(\b(?:docker|podman|apptainer|singularity|helm|nerdctl)[ \t]{1,8}(?:registry[ \t]{1,8})?login\b"
            r"[^\n]{0,200}?[ \t]-p[ \t]{1,4}[\"']?)" + _NOT_DONE + r"([^\s\"']{1,1024})"),
         _keep_prefix("password"), ("login",), probes=("docker login -u u -p ",)),
    # mysql -u root -pPASSWORD (the password glued to -p)
    Rule("password",
         _c(r"(\bmysql(?:dump|admin|import|show)?\b[^\n]{0,200}?[ \t]-p)" + _NOT_DONE + r"([^\s\"']{1,1024})"),
         _keep_prefix("password"), ("mysql",), probes=("mysql -u root -p",)),
    Rule("wandb-api-key",
         _c(r"(\bWANDB_API_KEY[\"']?[ \t]{0,8}[=:][ \t]{0,8}[\"']?)" + _NOT_DONE + r"([A-Za-z0-9_-]{8,512})", _I),
         _keep_prefix("wandb-api-key"), ("wandb_api_key",), probes=("WANDB_API_KEY=",)),
    Rule("wandb-api-key",
         _c(r"(\bwandb[ \t]{1,8}login(?:[ \t]{1,8}--?[A-Za-z][A-Za-z-]{0,30}(?:=[^\s]{1,200})?){0,3}[ \t]{1,8})"
            + r"((?:[A-Za-z0-9]{1,32}-)?[0-9a-f]{40}[A-Za-z0-9_]{0,88})(?![A-Za-z0-9_-])", _I),
         _keep_prefix("wandb-api-key"), ("wandb",), probes=("wandb login ", "wandb login --relogin ")),
    Rule("jwt",
         _c(r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8,8192}\.eyJ[A-Za-z0-9_-]{4,16384}\.[A-Za-z0-9_-]{0,8192}"),
         _whole("jwt"), ("eyj",), probes=("eyJ", "eyJhbGciOiJIUzI1.eyJ")),
    # a bearer token outside an Authorization header ("-H 'Bearer x'", "using bearer x")
    Rule("bearer",
         _c(r"(\bBearer[ \t]{1,8})" + _NOT_DONE + r"([A-Za-z0-9._~+/-]{16,16384}={0,2})", _I),
         _needs_digit("bearer"), ("bearer",), probes=("Bearer ",)),
    # password=..., "token": "...", export DB_PASSWORD=..., ?api_key=...&
    Rule("password",
         _c(r"(?P<key>" + _KEYWORDS + r")(?P<sep>[\"']?[ \t]{0,8}(?::=|=>|=|:)[ \t]{0,8})" + _VALUE, _I),
         _kv, ("pass", "pwd", "secret", "token", "key"),
         probes=("password=", "token: ", "\"secret\": \"", "api_key='"),
         kinds=("password", "secret", "token", "api-key")),
    # --password hunter2, --hf-token xyz (the --flag=value form is the rule above)
    Rule("password",
         _c(r"(?<![A-Za-z0-9_-])(--?(?:[A-Za-z0-9]{1,20}[_-]){0,3}(?P<key>" + _KEYWORDS + r"))([ \t]{1,4})"
            + _VALUE.replace("(?P<val>", "(?P<val>(?!-)"), _I),
         _cli_flag, ("pass", "pwd", "secret", "token", "key"),
         probes=("--password ", "--hf-token \""),
         kinds=("password", "secret", "token", "api-key")),
    # curl -u user:password, --user=user:password (docker -u 1000:1000 is not a password)
    Rule("password",
         _c(r"(?<![A-Za-z0-9_-])((?:-u|--user)(?:[ \t]{1,4}|=)[\"']?[^\s:\"'/]{1,256}:)" + _NOT_DONE
            + r"([^\s\"']{1,1024})"),
         _curl_user, ("-u",), probes=("curl -u alice:", "--user=")),
    Rule("email",
         _c(r"(?<![A-Za-z0-9._%+-])([A-Za-z0-9._%+-]{1,64})@(?:[A-Za-z0-9-]{1,63}\.){1,8}[A-Za-z]{2,24}"
            r"(?![A-Za-z0-9-])"),
         _email, ("@",), probes=("@", "a@")),
)

#: Every kind this module can report.
KINDS: Tuple[str, ...] = tuple(dict.fromkeys(
    ["private-key"] + [k for r in RULES for k in r.all_kinds()]))


def _gate_pattern() -> "re.Pattern[str]":
    """One search over the lower-cased line decides whether the rules run.

    Every match of a rule contains one of its hints (case-insensitively);
    hints that contain a shorter hint are dropped.  A case-sensitive search
    over ``line.lower()`` is several times faster than an IGNORECASE one.
    """
    hints = {h.lower() for r in RULES for h in r.hints}
    minimal = sorted(h for h in hints if not any(o != h and o in h for o in hints))
    return re.compile("|".join(re.escape(h) for h in minimal))


_GATE = _gate_pattern()

# Private key blocks
_PK_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PK_END = re.compile(r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
# A line inside a PEM block: base64 body, an RFC 1421 / PGP header, or blank,
# optionally behind an srun --label ("3: ") or torchrun ("[rank3]: ") prefix.
_PK_BODY = re.compile(
    r"[ \t]{0,16}(?:[0-9]{1,6}:[ \t]?|\[rank[0-9]{1,6}\]:[ \t]?)?"
    r"(?:[A-Za-z0-9+/=]{1,256}|(?:Proc-Type|DEK-Info|Comment|Version|Hash|Charset|MessageID):[^\r\n]{0,256}|)"
    r"[ \t]{0,16}")


def _split_ending(line: str) -> Tuple[str, str]:
    if line.endswith("\r\n"):
        return line[:-2], "\r\n"
    if line.endswith("\n") or line.endswith("\r"):
        return line[:-1], line[-1]
    return line, ""


class StreamRedactor:
    """Line-by-line redactor with flat memory; ``counts`` accumulates.

    Feed lines in order (with or without their endings); each call returns
    the redacted line with the same ending.  State carried between lines is
    only whether a private key block is open and how long it has been open.
    """

    def __init__(self, max_key_lines: int = PRIVATE_KEY_MAX_LINES) -> None:
        self.max_key_lines = max_key_lines
        self.counts: Dict[str, int] = {}
        self._in_key = False
        self._key_lines = 0

    # -- single-line rules -------------------------------------------------
    def _apply_rules(self, text: str) -> str:
        if not text or not _GATE.search(text.lower()):
            return text
        counts = self.counts
        for rule in RULES:
            def repl(m: "re.Match[str]", rule: Rule = rule) -> str:
                out = rule.replace(m)
                if out is None:
                    return m.group(0)
                # the replacement names its kind; count that one
                start = out.rfind("[REDACTED:")
                kind = out[start + 10:out.index("]", start)] if start >= 0 else rule.kind
                counts[kind] = counts.get(kind, 0) + 1
                return out
            text = rule.regex.sub(repl, text)
        return text

    # -- private key blocks ------------------------------------------------
    def _count_key(self) -> None:
        self.counts["private-key"] = self.counts.get("private-key", 0) + 1

    def _redact_body(self, body: str) -> str:
        """Redact one line's text (no ending), handling key blocks."""
        out = []
        pos = 0
        if self._in_key:
            end = _PK_END.search(body)
            if end is not None:
                self._in_key = False
                pos = end.end()
            elif self._key_lines >= self.max_key_lines or not _PK_BODY.fullmatch(body):
                # The block ended without an END line (truncated log, or a
                # BEGIN line that was only a mention): resume normal redaction.
                self._in_key = False
            else:
                self._key_lines += 1
                return ""
        while True:
            begin = _PK_BEGIN.search(body, pos) if "-----BEGIN" in body else None
            if begin is None:
                out.append(self._apply_rules(body[pos:]))
                break
            out.append(self._apply_rules(body[pos:begin.start()]))
            out.append(_mark("private-key"))
            self._count_key()
            end = _PK_END.search(body, begin.end())
            if end is None:
                # rest of this line is key material; following lines are too
                self._in_key = True
                self._key_lines = 0
                break
            pos = end.end()
        return "".join(out)

    def redact_line(self, line: str) -> str:
        body, ending = _split_ending(line)
        return self._redact_body(body) + ending

    def redact_chunk(self, text: str, lines: Optional[Callable[[str], Iterable[str]]] = None) -> str:
        """Redact ``text``, whole lines (a reader's chunk), in order with the
        chunks before it: a private key block left open at the end of one chunk
        is still redacted in the next.  A chunk without any hint is returned as
        it is after one gate search (the web's submit path: most logs hold none).
        ``lines`` splits the text into lines (default: at newlines)."""
        if not self._in_key and "-----BEGIN" not in text and not _BLOCK_GATE(text.lower()):
            return text
        out: List[str] = []
        block: List[str] = []
        for line in (lines or _iter_lines)(text):
            block.append(line)
            if len(block) >= _BLOCK_LINES:
                out.extend(_redact_block(self, block))
                block = []
        out.extend(_redact_block(self, block))
        return "".join(out)


def redact_lines(lines: Iterable[str], counts: Optional[Dict[str, int]] = None) -> Iterator[str]:
    """Redact an iterable of lines lazily (e.g. an open text file).

    Each output line keeps its input line ending.  If ``counts`` is given it
    is updated in place (kind -> number replaced) as lines are consumed.
    """
    redactor = StreamRedactor()
    if counts is not None:
        redactor.counts = counts
    # Fast path: most log lines hold no hint of a secret. Lines are taken in blocks
    # (at most _BLOCK_LINES lines / _BLOCK_CHARS characters); one gate search over the
    # whole block clears it when no line can match (the gate is a set of literal hints:
    # a hint in a line is a hint in the block). Otherwise each line goes the slow way.
    block: List[str] = []
    size = 0
    for line in lines:
        block.append(line)
        size += len(line)
        if len(block) >= _BLOCK_LINES or size >= _BLOCK_CHARS:
            yield from _redact_block(redactor, block)
            block, size = [], 0
    if block:
        yield from _redact_block(redactor, block)


_BLOCK_LINES = 256
_BLOCK_CHARS = 1 << 16


def _block_gate() -> Callable[[str], object]:
    """The gate for whole blocks: RE2 runs a literal alternation as a DFA, ~10x
    faster than Python's re over 64 KiB (same pattern: escaped literals only)."""
    try:
        import re2  # google-re2, a base dependency
        return re2.compile(_GATE.pattern).search
    except Exception:  # no wheel for this platform: the same pattern in re
        return _GATE.search


_BLOCK_GATE = _block_gate()


def _redact_block(redactor: "StreamRedactor", block: List[str]) -> Iterator[str]:
    if not redactor._in_key:
        text = "".join(block)
        if "-----BEGIN" not in text and not _BLOCK_GATE(text.lower()):
            return iter(block)
    return (redactor.redact_line(line) for line in block)


def redact_stream(src: Iterable[str], dst: TextIO) -> Mapping[str, int]:
    """Copy ``src`` lines to ``dst`` redacted; return the counts."""
    redactor = StreamRedactor()
    write = dst.write
    for line in src:
        write(redactor.redact_line(line))
    return MappingProxyType(dict(redactor.counts))


def _iter_lines(text: str) -> Iterator[str]:
    start = 0
    n = len(text)
    while start < n:
        nl = text.find("\n", start)
        if nl < 0:
            yield text[start:]
            return
        yield text[start:nl + 1]
        start = nl + 1


def redact_text(text: str) -> RedactionResult:
    """Redact a whole string; same rules and line handling as the stream form."""
    redactor = StreamRedactor()
    out = "".join(redactor.redact_line(line) for line in _iter_lines(text))
    return RedactionResult(out, MappingProxyType(dict(redactor.counts)))


#: A JSON/env key whose value is a secret whatever it looks like
#: (PASSWORD, DB_PASSWD, AWS_SECRET_ACCESS_KEY, HF_TOKEN, WANDB_API_KEY, MUNGE_KEY, ...).
_SECRET_KEY_NAME = re.compile(
    r"(?:^|[_.-])(?:pass(?:word|wd|phrase)?|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|key|"
    r"credentials?|auth)(?:$|[_.-])", _I)


def secret_key_name(key: str) -> bool:
    """True for a key (env variable, JSON field) whose value must never be stored."""
    return bool(_SECRET_KEY_NAME.search(key)) and key.upper() not in ("PWD", "OLDPWD", "SSH_AUTH_SOCK")


def redact_value_of(key: str, value: str) -> Optional[str]:
    """The replacement for `value` stored under `key`, or None to keep it:
    paths, placeholders and plain numbers (MAX_TOKENS=512) are not secrets."""
    v = value.strip()
    found = _SECRET_KEY_NAME.search(key)
    if found is None or not secret_key_name(key) or _is_placeholder(v) or v.isdigit() or v[:1] in ("/", "~"):
        return None
    return _mark(_family(found.group(0).strip("_.-")))
