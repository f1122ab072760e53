"""Governance settings: when an item matures, decays and expires, per agent role.

A TOML file (RunContext `long_term_policy`, env IMA_LONG_TERM_POLICY) overrides the
defaults; any key may be set for all scopes, for the shared memory or for one role:

    [default]
    min_support = 3        # distinct supporting runs needed to mature
    window_days = 90       # ... counted within this many days
    decay_days = 60        # a mature item without fresh support this long is provisional again
    explicit_matures = true  # a fact a user states (ima memory add/edit) is mature at once
    retention_days = 365   # items (and audit events) without support this long are deleted
    supporting_statuses = ["finalized"]  # run outcomes whose lessons count as support

    [shared]
    min_support = 4

    [roles.BOA]
    min_support = 2

    [limits]
    max_private = 8        # items per agent at run start
    max_shared = 4         # shared items per agent at run start
    shared_min_agents = 2  # a lesson held by this many agents in one run is a team lesson
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ima.core.errors import UserError
from ima.longterm.namespaces import Scope

DAY = 86400.0


@dataclass(frozen=True)
class Policy:
    min_support: int = 3
    window_days: float = 90
    decay_days: float = 60
    explicit_matures: bool = True
    retention_days: float = 365
    supporting_statuses: tuple[str, ...] = ("finalized",)


@dataclass(frozen=True)
class Limits:
    max_private: int = 8
    max_shared: int = 4
    shared_min_agents: int = 2
    max_candidates: int = 8  # lessons drafted per agent per run: one run cannot flood memory
    keep_revisions: int = 10  # older revision bodies are pruned (their log rows stay)


@dataclass(frozen=True)
class PolicySet:
    default: Policy = field(default_factory=Policy)
    shared: Policy | None = None
    roles: dict[str, Policy] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)

    def for_scope(self, scope: Scope) -> Policy:
        if scope.kind == "private":
            return self.roles.get(scope.token, self.default)
        return self.shared or self.default


def _coerce(cls: type, data: Any, where: str, base: Any) -> Any:
    if not isinstance(data, dict):
        raise UserError(f"long-term policy: [{where}] must be a table")
    known = {f.name: f for f in fields(cls)}
    values: dict[str, Any] = {}
    for key, raw in data.items():
        if key not in known:
            raise UserError(
                f"long-term policy: unknown key {key!r} in [{where}] (known: {', '.join(known)})"
            )
        default = getattr(base, key)
        if isinstance(default, tuple):
            if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
                raise UserError(f"long-term policy: {where}.{key} must be a list of strings")
            values[key] = tuple(raw)
        elif isinstance(default, bool):
            if not isinstance(raw, bool):
                raise UserError(f"long-term policy: {where}.{key} must be true or false")
            values[key] = raw
        else:
            if isinstance(raw, bool) or not isinstance(raw, int | float) or raw < 0:
                raise UserError(f"long-term policy: {where}.{key} must be a number >= 0")
            values[key] = type(default)(raw)
    return replace(base, **values)


def parse_policy(data: dict[str, Any]) -> PolicySet:
    unknown = sorted(set(data) - {"default", "shared", "roles", "limits"})
    if unknown:
        raise UserError(
            f"long-term policy: unknown table [{unknown[0]}] (use default, shared, roles, limits)"
        )
    default = _coerce(Policy, data.get("default", {}), "default", Policy())
    shared = _coerce(Policy, data["shared"], "shared", default) if "shared" in data else None
    roles_table = data.get("roles", {})
    if not isinstance(roles_table, dict):
        raise UserError("long-term policy: [roles] must hold one table per role, e.g. [roles.BOA]")
    roles = {
        role: _coerce(Policy, table, f"roles.{role}", default)
        for role, table in roles_table.items()
    }
    limits = _coerce(Limits, data.get("limits", {}), "limits", Limits())
    return PolicySet(default=default, shared=shared, roles=roles, limits=limits)


def load_policy(path: str | Path | None) -> PolicySet:
    """The policy in `path`, or the defaults when no path is given; UserError if unusable."""
    if not path:
        return PolicySet()
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"cannot read long-term policy {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"long-term policy {path} is not valid TOML: {exc}") from None
    return parse_policy(data)
