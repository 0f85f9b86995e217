"""Secret redaction, applied unconditionally to everything evalrunner writes.

Recordings, goldens, results, history and reports can end up in git or CI
artifacts, so secrets are replaced by ``[REDACTED]`` at write time, in dict keys
as well as values:

- the value of any key named like a secret (``api_key``, ``Authorization``, ...);
- every configured credential, wherever it appears: the values of environment
  variables named like credentials (which covers the provider keys litellm
  reads: ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``AZURE_API_KEY``,
  ``AZURE_AD_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ...) and every value passed to
  :func:`register_secret` (the ``api_key`` of each endpoint in use, and each
  ``api_key`` an agent hands to litellm, however the variable it came from is named);
- the common formats: detect-secrets' regex detectors that are scoped to one
  kind of credential (AWS, JWT, Stripe, Slack, GitHub, GitLab, npm, PyPI, ...),
  plus our own patterns where it has none (``sk-``/``sk-ant-`` keys, ``hf_``,
  bearer/basic headers, key-like query parameters, user:password in URLs,
  ``password: ...``, whole private-key blocks).

What cannot be caught: a secret that matches no pattern and is in no
configured place (a password typed into a prompt, a key read from a file).
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

REDACTED = "[REDACTED]"
_MIN_SECRET = 8  # shorter configured values ("1", "true", "local") would eat ordinary text

# JSON keys / header names whose values are secrets whatever they look like.
_SECRET_KEY = re.compile(
    r"(^|[_-])(api[_-]?key|apikey|secret|password|passwd|token|access[_-]?token|"
    r"refresh[_-]?token|authorization|auth|cookie|set-cookie|private[_-]?key|"
    r"client[_-]?secret|x-api-key|session[_-]?token|id[_-]?token|secret[_-]?(?:access[_-]?)?key)$",
    re.IGNORECASE,
)
# Token counts are not secrets: "prompt_tokens", "max_tokens", "total_tokens".
# Only the plural: "token", "access_token", "refresh_token" are credentials.
_NOT_SECRET_KEY = re.compile(r"tokens$|_token_ids$|token_count", re.IGNORECASE)

# Environment variables holding credentials: a name with one of these words as a
# component (OPENAI_API_KEY, MY_KEY_2, GATEWAY_AUTH, AZURE_AD_TOKEN, VERTEXAI_CREDENTIALS),
# unless the name says the value only points somewhere (..._URL, ..._FILE, ..._HEADER_NAME).
# PASS only as a whole component after another (DB_PASS): as a suffix it is BYPASS and
# COMPASS. PWD only as the password variables of MySQL and its kin: PWD, OLDPWD, ORIG_PWD
# hold directories.
_ENV_SECRET_NAME = re.compile(
    r"(?:^|_)[A-Z0-9]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDS?|CREDENTIALS?|"
    r"AUTH|PAT|COOKIE)(?:_|$)|_PASS(?:_|$)|(?:^|_)(?:MYSQL|DB)_PWD(?:_|$)",
    re.IGNORECASE,
)
_ENV_NOT_SECRET = re.compile(
    r"_(?:URL|URI|ENDPOINT|HOST|BASE|PATH|FILE|DIR|SOCK|TYPE|NAME|REGION|VERSION|ENABLED|"
    r"TIMEOUT|SECONDS)$",
    re.IGNORECASE,
)

_registered: set[str] = set()
_registered_lock = threading.Lock()
_names: set[str] = set()
"""Names that are evalrunner's own structure where they are keys (:func:`register_names`)."""


def register_secret(value: str | None) -> None:
    """Redact ``value`` wherever it appears from now on (an endpoint's or a call's API key).

    Values shorter than 8 characters are ignored: replacing them would eat ordinary text.
    """
    if isinstance(value, str) and len(value) >= _MIN_SECRET:
        with _registered_lock:
            _registered.add(value)


def register_names(names: Iterable[str]) -> None:
    """Take ``names`` as evalrunner's own structure wherever they are keys: scenario ids,
    check, score and tool names, as a suite or a run record states them.

    A key named like a secret (``reset_password``, ``rotate_token``, ``check_api_key``)
    has its value redacted in what a user or a model wrote. As a scenario id or a check
    name it holds our own data (a scenario's fingerprint, a check's result), and replacing
    that broke the file it was in: the night's manifest, its run files and its history
    entry were refused by every command after (issue 53). A model's tool argument named
    like one of these names is then not redacted by its key (its value still is, by
    format and by every configured credential).
    """
    found = [name for name in names if isinstance(name, str) and name]
    with _registered_lock:
        _names.update(found)


def _ours(key: str) -> bool:
    """``key`` is one of our own names, or a metric of one (``tool_used:<tool>``)."""
    return key in _names or key.partition(":")[2] in _names


def register_env_secrets(env: Mapping[str, str]) -> None:
    """Redact the credentials in an environment evalrunner builds for an agent (a command's
    ``env``), as those of its own environment are: they are in no variable it reads."""
    for name, value in env.items():
        if is_secret_env_name(name):
            register_secret(value)


@functools.lru_cache(maxsize=1024)
def is_secret_env_name(name: str) -> bool:
    """Whether an environment variable's value is a credential, judging by its name."""
    return bool(_ENV_SECRET_NAME.search(name)) and not _ENV_NOT_SECRET.search(name)


def configured_secrets() -> list[str]:
    """Every configured credential value, longest first (so a key containing another goes first)."""
    values = {v for k, v in os.environ.items() if len(v) >= _MIN_SECRET and is_secret_env_name(k)}
    with _registered_lock:
        values |= _registered
    return sorted(values, key=len, reverse=True)


# --- patterns -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Rule:
    """Patterns with the groups each replaces (none: the whole match), and the lower-case
    substrings one of which any of their matches contains: the patterns run only if
    one is in the text (a substring test costs a fraction of a regex scan)."""

    needles: tuple[str, ...]
    patterns: tuple[tuple[re.Pattern[str], tuple[int, ...]], ...]

    def apply(self, text: str, lowered: str) -> str:
        for needle in self.needles:
            if needle in lowered:
                break
        else:
            return text
        for regex, groups in self.patterns:
            if groups:
                text = regex.sub(functools.partial(_replace_groups, groups), text)
            else:
                text = regex.sub(REDACTED, text)
        return text


def _replace_groups(groups: tuple[int, ...], match: re.Match[str]) -> str:
    """The match with the first of ``groups`` that took part replaced."""
    whole, start = match.group(0), match.start()
    for group in groups:
        g0, g1 = match.span(group)
        if g0 >= 0:
            return whole[: g0 - start] + REDACTED + whole[g1 - start :]
    return whole


def _rule(regex: str, needles: tuple[str, ...], groups: tuple[int, ...] = ()) -> _Rule:
    return _Rule(needles, ((re.compile(regex), groups),))


# The rest of a token after a fixed-length match: detect-secrets matches Stripe keys
# by their first 24 characters and JWTs without their signature.
_TAIL = r"[A-Za-z0-9_\-]*"

# detect-secrets' RegexBasedDetector plugins that are scoped to one kind of
# credential: (module, class, needles). Left out: the entropy and keyword
# detectors (not regex-based; they would eat hashes and ids), the public-IP
# detector (addresses are not secrets), Artifactory (its "AP" + 9 letters pattern
# matches ordinary words such as "APACHEKAFKA"), and PrivateKeyDetector, whose
# markers are used for the whole-block rule below.
_DETECTORS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("aws", "AWSKeyDetector", ("a3t", "abia", "acca", "akia", "asia", "aws")),
    ("azure_storage_key", "AzureStorageKeyDetector", ("accountkey=",)),
    ("basic_auth", "BasicAuthDetector", ("://",)),
    ("cloudant", "CloudantDetector", ("cl",)),
    ("discord", "DiscordBotTokenDetector", (".",)),
    ("github_token", "GitHubTokenDetector", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    ("gitlab_token", "GitLabTokenDetector", ("gl", "gr1348941")),
    ("ibm_cloud_iam", "IbmCloudIamDetector", ("key", "pwd", "pass", "token")),
    ("ibm_cos_hmac", "IbmCosHmacDetector", ("secret",)),
    ("jwt", "JwtTokenDetector", ("eyj",)),
    ("mailchimp", "MailchimpDetector", ("-us",)),
    ("npm", "NpmDetector", ("_authtoken",)),
    ("openai", "OpenAIDetector", ("t3blbkfj",)),
    ("pypi_token", "PypiTokenDetector", ("pypi-",)),
    ("sendgrid", "SendGridDetector", ("sg.",)),
    ("slack", "SlackDetector", ("xox", "hooks.slack.com")),
    ("softlayer", "SoftlayerDetector", ("sl",)),
    ("square_oauth", "SquareOAuthDetector", ("sq0csp-",)),
    ("stripe", "StripeDetector", ("k_live_",)),
    ("telegram_token", "TelegramBotTokenDetector", (":",)),
    ("twilio", "TwilioKeyDetector", ("ac", "sk")),
)
# Detectors whose group 1 is the secret itself (the rest of the match is context
# such as "aws_secret_access_key = "); in the others a group is a prefix like "ghp".
_SECRET_IN_GROUP_1 = frozenset(
    {
        "AWSKeyDetector",
        "BasicAuthDetector",
        "CloudantDetector",
        "IbmCloudIamDetector",
        "IbmCosHmacDetector",
        "NpmDetector",
        "SoftlayerDetector",
    }
)


def _detector_rule(module: str, name: str, needles: tuple[str, ...]) -> _Rule:
    cls = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
    patterns: list[tuple[re.Pattern[str], tuple[int, ...]]] = []
    for regex in cls.denylist:
        if name in _SECRET_IN_GROUP_1 and regex.groups >= 1:
            patterns.append((regex, (1,)))
        else:
            # A verbose pattern may end in a comment; the newline ends it first.
            end = "\n)" if regex.flags & re.VERBOSE else ")"
            patterns.append((re.compile(f"(?:{regex.pattern}{end}{_TAIL}", regex.flags), ()))
    return _Rule(needles, tuple(patterns))


def _private_key_rule() -> _Rule:
    """A whole private-key block, from its BEGIN line to its END line (or the end of a
    truncated text), started by detect-secrets' markers or any ``BEGIN ... PRIVATE KEY``."""
    from detect_secrets.plugins.private_key import PrivateKeyDetector

    markers = [r"BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?"]
    markers += [r.pattern for r in PrivateKeyDetector.denylist]
    begin = "|".join(markers)
    return _rule(
        rf"(?s)(?:-----)?(?:{begin}).*?(?:-----END[^\n]*?-----|\Z)",
        ("private key", "putty-user-key"),
    )


# Ours, where detect-secrets has no detector (or a narrower one).
_KEY_NAMES = (
    r"password|passwd|passphrase|client[_-]?secret|secret[_-]?(?:access[_-]?)?key|api[_-]?key|"
    r"apikey|access[_-]?token|refresh[_-]?token|auth[_-]?token|session[_-]?token|private[_-]?key"
)
# The value after such a name: quoted, or one word that has a non-letter in it or ends
# the clause ("password: hunter2", "password=x"), but not the next word of a sentence
# ("enter your password: go to settings").
_BARE = r"[^\s\"',;&)}\]]"
_KEY_VALUE = (
    rf"(?i)(?<![A-Za-z0-9])(?:{_KEY_NAMES})[\"']?\s*[:=]\s*(?!\"?\[REDACTED\])"
    rf"(?:\"([^\"\n]+)\"|'([^'\n]+)'|({_BARE}*[^A-Za-z\s\"',;&)}}\]]{_BARE}*|[A-Za-z]+(?=\s*$|[\n,;.)}}\]])))"
)
_OWN_RULES = (
    # user:password@host in URLs (before detect-secrets' BasicAuth, which keeps the user)
    _rule(r"(?i)\b[a-z][a-z0-9+.-]*://([^/\s:@]+:[^/\s@]+)@", ("://",), (1,)),
    _rule(
        r"(?i)\b(?:bearer|basic|token)\s+([A-Za-z0-9._~+/=-]{8,})",
        ("bearer", "basic", "token"),
        (1,),
    ),
    _rule(r"\bsk-(?:ant-|proj-|or-)?[A-Za-z0-9_-]{16,}", ("sk-",)),
    _rule(
        r"\b(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _rule(r"\bAIza[0-9A-Za-z_-]{35}\b", ("aiza",)),
    _rule(r"\bhf_[A-Za-z0-9]{30,}", ("hf_",)),
    # key-like query parameters: ?api_key=...&token=...
    _rule(
        r"(?i)[?&](?:api[_-]?key|key|token|access_token|secret|sig|signature)=([^&\s\"']+)",
        ("=",),
        (1,),
    ),
    # password: hunter2, password=hunter2, "password": "hunter 2" (also in JSON text),
    # aws_secret_access_key = ... (detect-secrets wants it quoted)
    _rule(_KEY_VALUE, ("pass", "secret", "key", "token"), (1, 2, 3)),
)


@functools.cache
def _rules() -> tuple[_Rule, ...]:
    # Built on first use: importing detect-secrets takes a fifth of a second,
    # which commands that write nothing should not pay.
    detectors = (_detector_rule(*spec) for spec in _DETECTORS)
    return (_private_key_rule(), *_OWN_RULES, *detectors)


# --- redaction ----------------------------------------------------------------------------


def _text(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        if secret in text:
            # With the rest of its token: a key pasted into a longer one ("sk-test-123" +
            # "SECRET...") would leave the tail, which no pattern matches once the head is gone.
            text = _secret_token(secret).sub(REDACTED, text)
    if len(text) < _MIN_SECRET:
        return text  # nothing any pattern matches fits
    lowered = text.lower()
    for rule in _rules():
        text = rule.apply(text, lowered)
    return text


@functools.lru_cache(maxsize=256)
def _secret_token(secret: str) -> re.Pattern[str]:
    return re.compile(re.escape(secret) + _TAIL)


def redact_text(text: str, env_secrets: list[str] | None = None) -> str:
    """Replace secrets inside a string (a message, a traceback).

    ``env_secrets`` replaces the configured credential values (tests pass ``[]``).
    """
    return _text(text, configured_secrets() if env_secrets is None else env_secrets)


@functools.lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    # camelCase as words: "myApiKey" as "my_Api_Key", "sessionToken" as "session_Token".
    key = _CAMEL.sub("_", key)
    return bool(_SECRET_KEY.search(key)) and not _NOT_SECRET_KEY.search(key)


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


_MEMO_CHARS = 4_000_000
"""Characters of text whose redaction is remembered between passes (then it starts afresh)."""


class _Memo:
    """Strings already redacted, kept from pass to pass while the configured secrets stay the
    same: a night's runs send the same prompts, tool schemas and keys, and every run file
    would scan them again (with ~30 patterns, the larger part of writing one)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._secrets: tuple[str, ...] = ()
        self._done: dict[str, str] = {}
        self.chars = 0

    def table(self, secrets: list[str]) -> dict[str, str]:
        """The redactions made under ``secrets`` (a new secret or a full memo: none)."""
        key = tuple(secrets)
        with self._lock:
            if key != self._secrets or self.chars > _MEMO_CHARS:
                self._secrets, self._done, self.chars = key, {}, 0
            return self._done


_memo = _Memo()


class _Redactor:
    """One redaction pass: the configured secrets read once, each distinct string redacted
    once (and, with the same secrets, once per process: :class:`_Memo`).

    The walk is on the path of every run file a night writes, so it tests exact types
    first (a run's tree is plain dicts, lists and strings) and, for the values in a
    dict or list, takes a string's redaction from the memo without a call; anything
    else goes the general way.
    """

    def __init__(self, secrets: list[str]) -> None:
        self.secrets = secrets
        self.done = _memo.table(secrets)

    def text(self, text: str) -> str:
        out = self.done.get(text)
        if out is None:
            out = self.done[text] = _text(text, self.secrets)
            _memo.chars += len(text)
        return out

    def value(self, obj: Any) -> Any:
        kind = type(obj)
        if kind is str:
            return self.text(obj)
        if kind is dict:
            return self.mapping(obj)
        if kind is list:
            return self.sequence(obj)
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return self.mapping(obj)
        if isinstance(obj, list | tuple):
            return self.sequence(obj)
        return obj

    def sequence(self, obj: list[Any] | tuple[Any, ...]) -> list[Any]:
        done, value = self.done, self.value
        out = []
        for item in obj:
            if type(item) is str:
                hit = done.get(item)
                out.append(self.text(item) if hit is None else hit)
            else:
                out.append(value(item))
        return out

    def mapping(self, obj: dict[Any, Any]) -> dict[Any, Any]:
        done, value = self.done, self.value
        out: dict[Any, Any] = {}
        for key, item in obj.items():
            if isinstance(key, str):
                new_key = self.text(key)
                if new_key in out:  # two keys that were secrets: keep both values
                    new_key = _unique(new_key, out.__contains__)
                if _secret_value(key, item):
                    out[new_key] = REDACTED
                    continue
            else:
                new_key = key
                if new_key in out:
                    new_key = _unique(new_key, out.__contains__)
            if type(item) is str:
                hit = done.get(item)
                out[new_key] = self.text(item) if hit is None else hit
            else:
                out[new_key] = value(item)
        return out


def _secret_value(key: str, item: Any) -> bool:
    """A value redacted for its key: named like a secret, not one of our own names, and
    holding something (a yes/no is never a credential: a check's result)."""
    if item in (None, "", [], {}) or isinstance(item, bool):
        return False
    return is_secret_key(key) and not _ours(key)


def _unique(key: str, taken: Callable[[str], bool]) -> str:
    n = 2
    while taken(f"{key}#{n}"):
        n += 1
    return f"{key}#{n}"


def redact(obj: Any, env_secrets: list[str] | None = None) -> Any:
    """Return a copy of a JSON-like value with secrets (in keys and values) replaced by ``[REDACTED]``.

    ``env_secrets`` replaces the configured credential values (tests pass ``[]``).
    """
    secrets = configured_secrets() if env_secrets is None else env_secrets
    return _Redactor(secrets).value(obj)
