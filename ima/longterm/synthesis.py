"""The maturation gate: which items are beliefs an agent starts with, and which are only
stored. Computed from support and the clock on every read, so decay and expiry need no
background job and a test controls them with an injected clock."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ima.longterm.policy import DAY, Policy
from ima.longterm.records import Item, ScopeDoc, Support

State = Literal["mature", "provisional", "superseded", "expired"]


@dataclass(frozen=True)
class ItemStatus:
    state: State
    recent: int  # counted supporting runs within the window
    needed: int
    last_support_at: float  # last counted support (0: none)
    reason: str

    @property
    def applied(self) -> bool:
        """Only mature items reach an agent's starting memory."""
        return self.state == "mature"


def counts(support: Support, policy: Policy) -> bool:
    """User statements always count; runs count when their outcome is a supporting one."""
    return support.status == "user" or support.status in policy.supporting_statuses


def item_status(item: Item, policy: Policy, now: float) -> ItemStatus:
    counted = [s for s in item.support if counts(s, policy)]
    last = max((s.at for s in counted), default=0.0)
    recent = len(
        {
            s.thread if s.status != "user" else f"user{s.at}"
            for s in counted
            if now - s.at <= policy.window_days * DAY
        }
    )
    needed = policy.min_support

    def status(state: State, reason: str) -> ItemStatus:
        return ItemStatus(state, recent, needed, last, reason)

    if now - item.last_at > policy.retention_days * DAY:
        return status("expired", f"no support for over {policy.retention_days:g} days")
    if item.superseded_by:
        how = "corrected by" if item.superseded_why == "edit" else "superseded by the conflicting"
        return status("superseded", f"{how} item {item.superseded_by}")
    if item.source == "user" and policy.explicit_matures:
        return status("mature", "stated by the user")
    if recent < needed:
        return status(
            "provisional",
            f"{recent} of {needed} supporting runs within {policy.window_days:g} days",
        )
    idle = (now - last) / DAY
    if idle > policy.decay_days:
        return status(
            "provisional",
            f"decayed: no fresh support for {idle:.0f} days (limit {policy.decay_days:g})",
        )
    return status(
        "mature", f"{recent} supporting runs within {policy.window_days:g} days (needs {needed})"
    )


def _rank(item: Item, policy: Policy, now: float) -> tuple[bool, int, float, float]:
    s = item_status(item, policy, now)
    return (item.source == "user", s.recent, s.last_support_at, item.created_at)


def resolve_conflicts(doc: ScopeDoc, policy: Policy, now: float) -> None:
    """Items with the same subject and different values ("format: Parquet" / "format: ORC")
    cannot both hold: a user statement wins, then the most recent support, then the newest
    observation. Losers stay as superseded (with their provenance) and come back if their
    support later outweighs the winner; items corrected by an edit stay retired."""
    groups: dict[str, list[Item]] = {}
    for item in doc.items.values():
        if item.subject and item.superseded_why != "edit":
            groups.setdefault(item.subject, []).append(item)
    for members in groups.values():
        winner = max(members, key=lambda i: (*_rank(i, policy, now), i.id))
        for item in members:
            if item is winner:
                item.superseded_by, item.superseded_why = "", ""
            else:
                item.superseded_by, item.superseded_why = winner.id, "conflict"


def expire(doc: ScopeDoc, policy: Policy, now: float) -> int:
    """Delete items and forget-blocks past retention: memory is finite by construction."""
    limit = policy.retention_days * DAY
    old = [k for k, i in doc.items.items() if now - i.last_at > limit]
    for k in old:
        del doc.items[k]
    doc.blocked = {k: at for k, at in doc.blocked.items() if now - at <= limit}
    return len(old)
