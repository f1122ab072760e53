"""The records kept per scope: one document of items, rewritten as a new revision on every
change. Items carry their provenance (which run, turn and agents, when, with what outcome);
statuses are not stored but computed from support and the clock (see synthesis.py), so
decay needs no background job."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Source = Literal["run", "user"]
SUPPORT_KEPT = 50  # newest support entries kept per item; `support_total` keeps counting
FORMAT = 1


@dataclass
class Support:
    """One observation of an item: a run (thread) or a user statement."""

    thread: str
    turn: int
    agents: list[str]
    at: float
    status: str  # the run's outcome (finalized, turn_cap, failed) or "user"


@dataclass
class Item:
    id: str
    text: str
    key: str  # hash of the normalised text: equal lessons share it
    subject: str  # normalised "subject" of a "subject: value" lesson; "" if none
    source: Source
    created_at: float
    support: list[Support] = field(default_factory=list)
    support_total: int = 0
    superseded_by: str = ""
    superseded_why: str = ""  # conflict (may be revived by new support) or edit (final)
    replaces: str = ""  # the item an edit corrected

    @property
    def last_at(self) -> float:
        return max([s.at for s in self.support], default=self.created_at)

    def add_support(self, support: Support) -> bool:
        """Record one observation; a thread supports an item once (re-learning a run is a no-op)."""
        if support.thread != "user" and any(s.thread == support.thread for s in self.support):
            return False
        self.support.append(support)
        self.support = self.support[-SUPPORT_KEPT:]
        self.support_total += 1
        return True


@dataclass
class ScopeDoc:
    principal: str
    kind: str
    scope: str
    items: dict[str, Item] = field(default_factory=dict)
    blocked: dict[str, float] = field(default_factory=dict)  # forgotten keys -> when (no text)
    updated_at: float = 0.0
    rev: int = 0  # the revision this document was read at (not stored in the body)

    def to_value(self) -> dict[str, Any]:
        body = asdict(self)
        body.pop("rev")
        return {"format": FORMAT, **body}

    @classmethod
    def from_value(cls, value: dict[str, Any], rev: int) -> ScopeDoc:
        items = {
            k: Item(**{**v, "support": [Support(**s) for s in v.get("support", [])]})
            for k, v in value.get("items", {}).items()
        }
        return cls(
            principal=value["principal"],
            kind=value["kind"],
            scope=value["scope"],
            items=items,
            blocked=dict(value.get("blocked", {})),
            updated_at=float(value.get("updated_at", 0.0)),
            rev=rev,
        )


_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_MARKUP = re.compile(r"(?<!\w)[*_`~]+|[*_`~]+(?!\w)")  # emphasis marks, not snake_case
_TRAILING = re.compile(r"[\s.;,!]+$")


def clean_text(text: str) -> str:
    """A lesson as it is stored: one line, no bullet, no Markdown emphasis, no trailing dot."""
    text = unicodedata.normalize("NFKC", text)
    text = _BULLET.sub("", text)
    text = _MARKUP.sub("", text)
    text = " ".join(text.split())
    return _TRAILING.sub("", text)


def normalise(text: str) -> str:
    """The comparison form: case, punctuation and spacing do not make two lessons differ."""
    text = clean_text(text).casefold()
    return " ".join(re.sub(r"[^\w%/+-]+", " ", text).split())


def text_key(text: str) -> str:
    return hashlib.sha256(normalise(text).encode()).hexdigest()[:16]


def subject_of(text: str) -> str:
    """`storage format` for "Storage format: Parquet": lessons with the same subject and
    different values conflict. Only short subjects count, so ordinary sentences with a
    colon do not."""
    head, sep, value = clean_text(text).partition(":")
    if not sep or not value.strip():
        return ""
    words = normalise(head).split()
    return " ".join(words) if 0 < len(words) <= 5 else ""


def item_id(kind: str, scope: str, key: str) -> str:
    """Stable per scope: the same lesson in two roles' memories has two ids."""
    return hashlib.sha256(f"{kind}/{scope}/{key}".encode()).hexdigest()[:10]


def new_item(kind: str, scope: str, text: str, source: Source, now: float) -> Item:
    text = clean_text(text)
    key = text_key(text)
    return Item(
        id=item_id(kind, scope, key),
        text=text,
        key=key,
        subject=subject_of(text),
        source=source,
        created_at=now,
    )
