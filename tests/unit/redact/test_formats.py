"""Credentials in well-known formats are redacted inside any text, whatever surrounds
them; ordinary text (hashes, ids, prose about passwords and tokens) is left alone."""

from __future__ import annotations

import pytest

from evalrunner._redact import REDACTED, redact_text

R = REDACTED

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", f"Authorization: Bearer {R}"),
        ("auth: basic dXNlcjpwYXNzd29yZA==", f"auth: basic {R}"),
        ("Token abcdefgh12345678", f"Token {R}"),
        (
            "GET https://api.example.com/v1/x?api_key=abc123&model=gpt&token=zzz&sig=q1",
            f"GET https://api.example.com/v1/x?api_key={R}&model=gpt&token={R}&sig={R}",
        ),
        ("postgres://admin:hunter2@db.internal:5432/app", f"postgres://{R}@db.internal:5432/app"),
        ("https://user:p%40ss@example.com/path", f"https://{R}@example.com/path"),
        (
            "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----\nend",
            f"key:\n{R}\nend",
        ),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----", R),
        ("use sk-proj-abcDEF1234567890_xyz-00 now", f"use {R} now"),
        ("sk-ant-api03-abcdefghijklmnopqrstuv", R),
        (
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789 and github_pat_11ABCDEFG0123456789_abcdef",
            f"{R} and {R}",
        ),
        ("AKIAIOSFODNN7EXAMPLE", R),
        ("hf_abcdefghijklmnopqrstuvwxyzABCDEF", R),
        ("xoxb-1234567890-abcdefghij", R),
    ],
)
def test_formats_redacted_before(text: str, expected: str) -> None:
    assert redact_text(text, env_secrets=[]) == expected
    assert redact_text(expected, env_secrets=[]) == expected  # idempotent


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Stripe keys, secret and restricted, whole (detect-secrets matches the first 24 characters)
        ("charge with sk_live_4eC39HqLyjWDarjtT1zdp7dc", f"charge with {R}"),
        (
            "rk_live_51H8aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789abcdefghijklmnop, then",
            f"{R}, then",
        ),
        # a bare JWT, signature included
        (f"session={JWT};", f"session={R};"),
        (f"id token {JWT}", f"id token {R}"),
        # password: ... / password=...
        ("password: hunter2", f"password: {R}"),
        ("login?user=bob&password=hunter2&next=/", f"login?user=bob&password={R}&next=/"),
        ('{"password": "correct horse battery"}', f'{{"password": "{R}"}}'),
        ("DB_PASSWORD=s3cr3t! psql", f"DB_PASSWORD={R} psql"),
        ("passwd='x y z'", f"passwd='{R}'"),
        ("the root password: secret", f"the root password: {R}"),
        # AWS secret access keys, as config files, env dumps and code write them
        (f"aws_secret_access_key = {AWS_SECRET}", f"aws_secret_access_key = {R}"),
        (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n", f"AWS_SECRET_ACCESS_KEY={R}\n"),
        (f'aws_key: "{AWS_SECRET}"', f'aws_key: "{R}"'),
        ("temporary ASIAY34FZKBOKMUTVV7A", f"temporary {R}"),
        # more of detect-secrets' formats
        ("https://hooks.slack.com/services/T0000AAAA/B0000BBBB/XXXXXXXXXXXXXXXXXXXXXXXX", R),
        ("glpat-abcdefghij0123456789 ok", f"{R} ok"),
        (
            "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789",
            f"//registry.npmjs.org/:_authToken={R}",
        ),
        ("pypi-AgEIcHlwaS5vcmc" + "A1b2C3d4E5" * 8, R),
        ("SG." + "a" * 22 + "." + "b" * 43, R),
        ("twilio SK" + "0123456789abcdef" * 2, f"twilio {R}"),
        ("AccountKey=" + "A" * 86 + "==;", f"{R};"),
        # a private key cut off before its END line (a truncated message)
        (
            "here: -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUA",
            f"here: {R}",
        ),
        ("PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nPrivate-Lines: 14\nAAAAgQ", R),
    ],
)
def test_formats_redacted_now(text: str, expected: str) -> None:
    assert redact_text(text, env_secrets=[]) == expected
    assert redact_text(expected, env_secrets=[]) == expected  # idempotent


@pytest.mark.parametrize(
    "text",
    [
        "The capital of France is Paris.",
        "checksum 0xdeadbeef, sha 3f786850e387550fdab836ed7e6dc881de23001b",
        "https://example.com/search?q=paris&page=2",
        "tokens used: 1234; the token budget is fine",
        "sk-short",  # too short to be a key
        "desk-lamp-model-variant-number-seven",  # 'sk-' inside a word
        # ids, hashes and times a history is full of
        "run example/direct_answer/openai-gpt-4o-mini/17 at 2025-01-01T02:00:00Z",
        "trajectory 123e4567-e89b-12d3-a456-426614174000, content_hash 4dd2222534d89a3b",
        "call_9f8e7d6c5b4a3f2e1d0c, chatcmpl-AbCdEf0123456789",
        "sha256:9c56cc51b374c3ba189210d5b6d4bf57790d351c96c47c02190ecf1e430635ab",
        "Public IP 8.8.8.8 and APACHEKAFKA ARE ordinary words",
        # prose about passwords and keys
        "The password field is required.",
        "To reset your password: go to settings and click Forgot.",
        "tests pass: 12/12",
        "api key rotation is due; the secret is to keep keys short-lived.",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact_text(text, env_secrets=[]) == text


def test_detect_secrets_detectors_are_in_use() -> None:
    # The formats above come from detect-secrets' own patterns, not copies of them.
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.stripe import StripeDetector

    from evalrunner._redact import _rules

    patterns = {regex.pattern for rule in _rules() for regex, _ in rule.patterns}
    for detector in (JwtTokenDetector, StripeDetector):
        for regex in detector.denylist:
            assert any(regex.pattern in p for p in patterns), regex.pattern
