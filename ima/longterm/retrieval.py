"""Retrieval at run start: each agent's starting memory holds its mature private items and
the mature shared items, within a token budget and the shared guardrails:

- private items come first; shared items fill what is left;
- a shared item never overrides a role's own belief: one with the same text or the same
  subject as a private item the role holds is dropped;
- at most `max_private` and `max_shared` items per agent (policy [limits]).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ima import prompts
from ima.core.tokens import count_tokens
from ima.longterm.errors import ScopeViolation
from ima.longterm.hub import MemoryHub
from ima.longterm.namespaces import SHARED, Scope, private
from ima.longterm.records import Item
from ima.longterm.synthesis import item_status


@dataclass
class StartingMemory:
    texts: dict[str, str]  # role -> text to start its memory slot with ("" if nothing)
    report: dict[str, Any] = field(default_factory=dict)  # ids and counts for the run record


def _mature(hub: MemoryHub, scope: Scope) -> list[Item]:
    """Mature items, strongest first: user statements, then recent support, then recency."""
    now, policy = hub.now(), hub.policy(scope)
    ranked = []
    for item in hub.read(scope).items.values():
        status = item_status(item, policy, now)
        if status.applied:
            ranked.append(((item.source == "user", status.recent, item.last_at, item.id), item))
    return [item for _, item in sorted(ranked, key=lambda p: p[0], reverse=True)]


def render(own: Sequence[Item], team: Sequence[Item]) -> str:
    parts = []
    if own:
        parts.append(
            prompts.render("longterm_private", items="\n".join(f"- {i.text}" for i in own))
        )
    if team:
        parts.append(
            prompts.render("longterm_shared", items="\n".join(f"- {i.text}" for i in team))
        )
    return "\n\n".join(parts)


def _read(hub: MemoryHub, scope: Scope, refused: list[str]) -> list[Item]:
    try:
        return _mature(hub, scope)
    except ScopeViolation:  # a planted or mislabelled record: refuse the scope, go on
        refused.append(scope.label)
        return []


def starting_memory(hub: MemoryHub, roles: Sequence[str], budget_tokens: int) -> StartingMemory:
    """Each role's starting memory text and a report of what was loaded (ids, counts,
    tokens; no contents). Raises MemoryUnavailable if the store fails."""
    limits = hub.policies.limits
    refused: list[str] = []
    team_all = _read(hub, SHARED, refused)
    texts: dict[str, str] = {}
    per_role: dict[str, Any] = {}
    for role in roles:
        own_all = _read(hub, private(role), refused)
        own_keys = {i.key for i in own_all}
        own_subjects = {i.subject for i in own_all if i.subject}
        allowed_team = [
            i for i in team_all if i.key not in own_keys and i.subject not in own_subjects
        ]
        candidates = [("private", i) for i in own_all[: limits.max_private]] + [
            ("shared", i) for i in allowed_team[: limits.max_shared]
        ]
        own: list[Item] = []
        team: list[Item] = []
        over_budget = 0
        for where, item in candidates:  # greedy: stronger items first, skip what does not fit
            trial = ([*own, item], team) if where == "private" else (own, [*team, item])
            if count_tokens(render(*trial)) <= budget_tokens:
                own, team = trial
            else:
                over_budget += 1
        texts[role] = render(own, team)
        per_role[role] = {
            "private": [i.id for i in own],
            "shared": [i.id for i in team],
            "tokens": count_tokens(texts[role]) if texts[role] else 0,
            "skipped_budget": over_budget,
            "skipped_limit": max(len(own_all) - limits.max_private, 0)
            + max(len(allowed_team) - limits.max_shared, 0),
            "shared_shadowed": len(team_all) - len(allowed_team),  # the role's own belief wins
        }
    report = {
        "enabled": True,
        "available": True,
        "principal": hub.principal,
        "budget_tokens": budget_tokens,
        "loaded": {
            "private": sum(len(r["private"]) for r in per_role.values()),
            "shared": len({i for r in per_role.values() for i in r["shared"]}),
        },
        "roles": per_role,
    }
    if refused:
        report["refused_scopes"] = sorted(set(refused))
    return StartingMemory(texts, report)
