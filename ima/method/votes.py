"""Tolerant parsing of the markers agents write: votes and FINALIZE.

Small models decorate their answers ("**ACCEPT**", "Vote: accept.", "I cannot accept"),
so the first line decides when it holds a vote, then the whole text if it is unambiguous.
"""

from __future__ import annotations

import re

_NEGATED_ACCEPT = re.compile(r"\b(not|cannot|can't|won't|don't|do not)\s+accept", re.I)
_ACCEPT = re.compile(r"\baccept(s|ed)?\b", re.I)
_REJECT = re.compile(r"\breject(s|ed)?\b", re.I)
_MARKER_WORDS = re.compile(r"\b(?:accept(?:s|ed)?|reject(?:s|ed)?|finali[sz]e)\b", re.I)
_FINALIZE = re.compile(r"\bFINALI[SZ]E\b|^\W*(?i:finali[sz]e)\b", re.M)


def _vote_in(text: str) -> str | None:
    if _REJECT.search(text) or _NEGATED_ACCEPT.search(text):
        return None if _ACCEPT.search(_NEGATED_ACCEPT.sub("", text)) else "REJECT"
    return "ACCEPT" if _ACCEPT.search(text) else None


def parse_vote(text: str) -> str | None:
    """ACCEPT, REJECT, or None when the text holds no clear vote."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    return _vote_in(first) or _vote_in(text)


def parse_flags(text: str, voting: bool = True) -> list[str]:
    """Markers in a turn; votes count only in a voting turn (a facilitator's "all accepted"
    is not a vote)."""
    flags = [vote] if voting and (vote := parse_vote(text)) else []
    if _FINALIZE.search(text):
        flags.append("FINALIZE")
    return flags


def only_markers(text: str) -> bool:
    """Whether a turn holds nothing but markers and punctuation (a bare "ACCEPT")."""
    return not re.sub(r"\W+", "", _MARKER_WORDS.sub("", text))
