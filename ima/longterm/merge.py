"""Merge: fold candidate lessons into a scope's document. Pure (document, candidates,
policy, time) -> changed document, so a writer that lost a race simply runs it again on
the fresh document: nothing another writer added is overwritten."""

from __future__ import annotations

from dataclasses import dataclass, field

from ima.longterm.policy import Policy
from ima.longterm.records import ScopeDoc, Source, Support, new_item
from ima.longterm.synthesis import expire, resolve_conflicts


@dataclass(frozen=True)
class Candidate:
    """A lesson and where it came from (a run's thread, turn and agents, or the user)."""

    text: str
    thread: str
    turn: int
    agents: tuple[str, ...]
    status: str  # run outcome, or "user"
    source: Source = "run"


@dataclass
class MergeStats:
    added: int = 0
    supported: int = 0  # existing items that gained support
    repeated: int = 0  # already supported by the same run: not counted twice
    blocked: int = 0  # forgotten by the user: not learned again
    expired: int = 0
    ids: list[str] = field(default_factory=list)

    def changed(self) -> bool:
        return bool(self.added or self.supported or self.expired)


def merge(doc: ScopeDoc, candidates: list[Candidate], policy: Policy, now: float) -> MergeStats:
    stats = MergeStats()
    for cand in candidates:
        fresh = new_item(doc.kind, doc.scope, cand.text, cand.source, now)
        if fresh.key in doc.blocked:
            if cand.source != "user":
                stats.blocked += 1
                continue
            del doc.blocked[fresh.key]  # the user states it again: lift their own block
        item = doc.items.get(fresh.id)
        if item is None:
            item = doc.items[fresh.id] = fresh
            stats.added += 1
        elif cand.source == "user":
            item.source = "user"  # a user confirming a learned lesson makes it explicit
        support = Support(cand.thread, cand.turn, list(cand.agents), now, cand.status)
        if item.add_support(support):
            stats.supported += item is not fresh
        else:
            stats.repeated += 1
        stats.ids.append(item.id)
    resolve_conflicts(doc, policy, now)
    stats.expired = expire(doc, policy, now)
    return stats
