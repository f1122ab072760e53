"""The screen every long-term write passes: personal data, secrets and instruction-like
text are refused. Findings name the kind of problem only, never the matched text, so a
refusal can be shown and recorded without leaking what it refused."""

from __future__ import annotations

import re
from collections.abc import Callable

from ima.longterm.errors import Refused

Check = Callable[[str], bool]


def _pattern(regex: str, flags: int = 0) -> Check:
    compiled = re.compile(regex, flags)
    return lambda text: compiled.search(text) is not None


def _iban(text: str) -> bool:
    """IBAN-shaped strings whose mod-97 checksum holds (shape alone flags part numbers)."""
    for match in re.finditer(
        r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?\b", text
    ):
        raw = match.group(0).replace(" ", "")
        if not 15 <= len(raw) <= 34:
            continue
        digits = "".join(str(int(c, 36)) for c in raw[4:] + raw[:4])
        if int(digits) % 97 == 1:
            return True
    return False


def _card(text: str) -> bool:
    """Payment card numbers: 13-19 digits (spaces or dashes allowed) passing Luhn."""
    for match in re.finditer(r"\b\d(?:[ -]?\d){12,18}\b", text):
        digits = [int(c) for c in match.group(0) if c.isdigit()]
        total = sum(
            d if i % 2 == 0 else (d * 2 - 9 if d * 2 > 9 else d * 2)
            for i, d in enumerate(reversed(digits))
        )
        if total % 10 == 0 and len(set(digits)) > 1:
            return True
    return False


def _random_token(text: str) -> bool:
    """Long strings mixing upper case, lower case and digits look like generated keys;
    lower-case hex (commit ids, checksums) and ordinary words do not."""
    for match in re.finditer(r"[A-Za-z0-9+/_=-]{32,}", text):
        s = match.group(0)
        if (
            any(c.isupper() for c in s)
            and any(c.islower() for c in s)
            and any(c.isdigit() for c in s)
        ):
            return True
    return False


# Ordered: the first matching kind is the reason given.
CHECKS: tuple[tuple[str, Check], ...] = (
    ("a private key", _pattern(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    ("an AWS access key", _pattern(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b")),
    (
        "an AWS secret key",
        _pattern(r"aws_?secret_?access_?key\s*[:=]\s*\S{20,}", re.IGNORECASE),
    ),
    ("an API key", _pattern(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}")),
    ("an API key", _pattern(r"\b(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{10,}")),
    (
        "an access token",
        _pattern(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}|\bgithub_pat_\w{20,}"),
    ),
    ("an access token", _pattern(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("an API key", _pattern(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("a bearer token", _pattern(r"\bbearer\s+[A-Za-z0-9._~+/-]{12,}=*", re.IGNORECASE)),
    ("a JSON web token", _pattern(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+")),
    (
        "a password or secret",
        _pattern(
            r"\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token)\s*[:=]\s*\S{6,}",
            re.IGNORECASE,
        ),
    ),
    ("a secret-looking token", _random_token),
    (
        "an e-mail address",
        _pattern(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"),
    ),
    (
        "a phone number",
        _pattern(
            r"(?<![\w+])\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]?\d{2,4}){1,4}\b"  # +49 170 1234567
            r"|\(\d{3}\)[ .-]?\d{3}[ .-]\d{4}\b"  # (555) 123-4567
            r"|\b\d{3}[.-]\d{3}[.-]\d{4}\b"  # 555-123-4567
            r"|\b0\d{2,4}[ /-]\d{5,9}\b"  # 0170 1234567, 030/1234567
        ),
    ),
    ("an IBAN", _iban),
    ("a payment card number", _card),
    (
        "instruction-like text",
        _pattern(
            r"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+|the\s+)?(?:previous|prior|above|earlier)\b"
            r"|(?-i:\b(?:SYSTEM|ASSISTANT)\s*:)|^\s*(?:system|assistant)\s*:"  # not "File system: HDFS"
            r"|\byou\s+are\s+now\b"
            r"|\b(?:replace|overwrite|erase)\s+(?:the\s+)?memory\b",
            re.IGNORECASE,
        ),
    ),
)


def findings(text: str) -> list[str]:
    """Kinds of sensitive content in `text` (empty: clean). Never the content itself."""
    out: list[str] = []
    for kind, check in CHECKS:
        if kind not in out and check(text):
            out.append(kind)
    return out


def ensure_clean(text: str) -> str:
    """`text` unchanged, or Refused naming what kind of content it holds."""
    found = findings(text)
    if found:
        raise Refused(
            f"refused: the text contains {' and '.join(found)}; long-term memory never "
            "stores personal data, secrets or instructions to agents"
        )
    return text
