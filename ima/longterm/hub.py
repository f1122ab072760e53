"""The memory hub: the only way to long-term memory. It owns namespace construction (from
its principal, never from a caller's argument), the conditional-write loop, the screen on
every write, the scope re-check on every read, and the audit trail of corrections.

One class in one file of about 400 lines on purpose: every read and write goes through these
checks; spread over modules, a path that skips one of them would be easy to add unseen."""

from __future__ import annotations

import logging
import random
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from langgraph.store.base import BaseStore

from ima.core.errors import UserError
from ima.longterm.errors import (
    InvalidToken,
    LongTermError,
    MemoryUnavailable,
    Refused,
    UnknownItem,
    WriteConflict,
)
from ima.longterm.merge import Candidate, MergeStats, merge
from ima.longterm.namespaces import (
    AUDIT,
    ROOT,
    SHARED,
    Scope,
    check_in_scope,
    namespace,
    private,
    safe_token,
)
from ima.longterm.policy import DAY, Policy, PolicySet
from ima.longterm.records import Item, ScopeDoc, clean_text, new_item
from ima.longterm.revisions import Revision, RevisionLog, log_for, writer_id
from ima.longterm.screening import ensure_clean, findings
from ima.longterm.synthesis import ItemStatus, item_status, resolve_conflicts

log = logging.getLogger(__name__)  # ids, counts and scopes only: never memory contents
Clock = Callable[[], float]
T = TypeVar("T")
DOC_KEY = "doc"
_ITEM_ID = re.compile(r"[0-9a-f]{4,10}")


def _valid(token: str) -> bool:
    try:
        safe_token(token)
    except InvalidToken:
        return False
    return True


@dataclass(frozen=True)
class Entry:
    """One item as inspection shows it: where it lives and its computed status."""

    scope: Scope
    item: Item
    status: ItemStatus


class MemoryHub:
    """Private memory per agent role plus a shared team memory for one principal."""

    def __init__(
        self,
        store: BaseStore,
        principal: str,
        *,
        revisions: RevisionLog | None = None,
        policies: PolicySet | None = None,
        clock: Clock = time.time,
        max_attempts: int = 100,
    ) -> None:
        self._store = store
        self.principal = safe_token(principal, "principal")
        self._log = revisions or log_for(store)
        self.policies = policies or PolicySet()
        self.clock = clock
        self.max_attempts = max_attempts
        self._closer: Callable[[], None] | None = None

    @classmethod
    def open(
        cls,
        path: str | Path,
        principal: str,
        *,
        timeout: float = 30.0,
        read_only: bool = False,
        **kwargs: Any,
    ) -> MemoryHub:
        """A hub on a SQLite file (created if missing, unless `read_only`); MemoryUnavailable
        if unusable. (A PostgreSQL store: `ima.runs.database.open_memory_hub`.)"""
        from ima.longterm.backend import open_sqlite

        return cls.on_backend(open_sqlite(path, timeout, read_only), principal, **kwargs)

    @classmethod
    def on_backend(cls, backend: Any, principal: str, **kwargs: Any) -> MemoryHub:
        """A hub on an opened backend (its store and revision log); closes it with the hub."""
        try:
            hub = cls(backend.store, principal, revisions=backend.revisions, **kwargs)
        except BaseException:
            backend.close()
            raise
        hub._closer = backend.close
        return hub

    def close(self) -> None:
        if self._closer:
            self._closer()
            self._closer = None

    def __enter__(self) -> MemoryHub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def store(self) -> BaseStore:
        """The underlying LangGraph store, to compile the graph with (`store=`)."""
        return self._store

    def now(self) -> float:
        return self.clock()

    def policy(self, scope: Scope) -> Policy:
        return self.policies.for_scope(scope)

    # -- storage primitives ---------------------------------------------------------

    def _guard(self, action: Callable[[], T]) -> T:
        """Any backend failure becomes MemoryUnavailable (the runner's signal to go on
        without long-term memory); the message names the failure, not the data."""
        try:
            return action()
        except LongTermError:
            raise
        except Exception as exc:
            reason = (str(exc).splitlines() or [""])[0][:200]
            raise MemoryUnavailable(
                f"long-term memory store failed: {type(exc).__name__}: {reason}"
            ) from None

    def read(self, scope: Scope) -> ScopeDoc:
        """The scope's head document (empty at revision 0); out-of-scope records are refused."""
        ns = namespace(self.principal, scope)
        for _ in range(20):
            head = self._guard(lambda: self._log.head(ns, DOC_KEY))
            if head is None:
                return ScopeDoc(self.principal, scope.kind, scope.token)
            found = self._guard(lambda head=head: self._store.get(ns, head.body))
            if found is None:  # pruned after we read the head: a newer head exists
                continue
            value = check_in_scope(self.principal, scope, found.namespace, found.value)
            try:
                return ScopeDoc.from_value(value, head.rev)
            except (KeyError, TypeError, ValueError, AttributeError):
                raise MemoryUnavailable(
                    f"long-term record {scope.label} rev {head.rev} is corrupted"
                ) from None
        raise MemoryUnavailable("long-term record kept changing while being read")

    def update(self, scope: Scope, change: Callable[[ScopeDoc], bool]) -> ScopeDoc:
        """Apply `change` (which mutates the document and says whether it changed it) as
        a conditional write on the revision read. A loser re-reads and applies `change`
        again to the fresh document: no update is lost, none is blindly overwritten."""
        if scope.kind == "audit":
            raise LongTermError("audit events are appended with record_event, not updated")
        ns = namespace(self.principal, scope)
        for attempt in range(self.max_attempts):
            doc = self.read(scope)
            if not change(doc):
                return doc
            doc.updated_at = self.now()
            for item in doc.items.values():  # the screen guards every write, whatever the path
                if findings(item.text):
                    raise Refused(
                        f"refused: item {item.id} holds {findings(item.text)[0]}; nothing was written"
                    )
            rev = Revision(
                doc.rev + 1,
                f"{DOC_KEY}~{doc.rev + 1:08d}~{uuid.uuid4().hex[:12]}",
                writer_id(),
                doc.updated_at,
            )
            body = doc.to_value()
            self._guard(lambda rev=rev, body=body: self._store.put(ns, rev.body, body, index=False))
            if self._guard(lambda rev=rev: self._log.claim(ns, DOC_KEY, rev)):
                doc.rev = rev.rev
                self._prune(ns, rev.rev)
                log.debug(
                    "long-term %s/%s: rev %d (%d items)",
                    scope.kind,
                    scope.token,
                    rev.rev,
                    len(doc.items),
                )
                return doc
            self._guard(lambda rev=rev: self._store.delete(ns, rev.body))  # our body lost
            log.debug("long-term %s/%s: lost rev %d, re-merging", scope.kind, scope.token, rev.rev)
            time.sleep(random.uniform(0, 0.002 * min(attempt + 1, 10)))
        raise WriteConflict(
            f"long-term memory {scope.label}: too many concurrent writers, try again"
        )

    def _prune(self, ns: tuple[str, ...], head: int, keep: int | None = None) -> None:
        """Delete revision bodies that fell out of the kept history (their log rows, which
        hold no content, stay). keep=1 purges all but the head: used by forget and reset
        so corrected text does not survive in old revisions."""
        keep = self.policies.limits.keep_revisions if keep is None else max(keep, 1)
        if keep == 1 or head - keep >= 1:
            old = [
                r
                for r in self._guard(lambda: self._log.history(ns, DOC_KEY))
                if r.rev <= head - keep
            ]
            if keep != 1:
                old = old[-1:]  # only the one that just fell out; older ones went before
            for r in old:
                self._guard(lambda r=r: self._store.delete(ns, r.body))

    # -- scopes and items -----------------------------------------------------------

    def private(self, role: str) -> Scope:
        return private(role)

    @property
    def shared(self) -> Scope:
        return SHARED

    def scopes(self) -> list[Scope]:
        """The principal's private scopes that exist, then the shared scope."""
        prefix = (ROOT, self.principal, "private")
        found = self._guard(
            lambda: self._store.list_namespaces(prefix=prefix, max_depth=4, limit=10000)
        )
        roles = sorted({ns[3] for ns in found if len(ns) == 4 and tuple(ns[:3]) == prefix})
        scopes = [private(r) for r in roles if _valid(r)]  # skip anything planted oddly
        # Some stores list a namespace once it was merely read: keep scopes with a document.
        heads = [
            self._guard(lambda s=s: self._log.head(namespace(self.principal, s), DOC_KEY))
            for s in scopes
        ]
        return [s for s, h in zip(scopes, heads, strict=True) if h is not None] + [SHARED]

    def entries(self, scopes: list[Scope] | None = None) -> list[Entry]:
        now = self.now()
        out = []
        for scope in scopes or self.scopes():
            doc = self.read(scope)
            policy = self.policy(scope)
            out += [Entry(scope, i, item_status(i, policy, now)) for i in doc.items.values()]
        return out

    def find(self, item_id: str) -> Entry:
        """The item with this id (or unique id prefix) in this principal's memory."""
        if not isinstance(item_id, str) or not _ITEM_ID.fullmatch(item_id):
            raise UnknownItem(
                f"invalid memory item id {str(item_id)[:40]!r}: ids are 4-10 hex digits "
                "(see `ima memory list`)"
            )
        matches = [e for e in self.entries() if e.item.id.startswith(item_id)]
        if not matches:
            raise UnknownItem(f"no memory item {item_id!r}: see `ima memory list`")
        if len(matches) > 1:
            raise UserError(f"memory item id {item_id!r} is ambiguous: give more digits")
        return matches[0]

    # -- writes ---------------------------------------------------------------------

    def merge(self, scope: Scope, candidates: list[Candidate]) -> MergeStats:
        """Merge screened candidates into `scope` (a conditional write, retried on conflict)."""
        for cand in candidates:  # provenance is stored too, so it is screened too
            for text in (cand.text, cand.thread, *cand.agents):
                ensure_clean(text)
        result: list[MergeStats] = []

        def change(doc: ScopeDoc) -> bool:
            result[:] = [merge(doc, candidates, self.policy(scope), self.now())]
            return result[0].changed()

        self.update(scope, change)
        return result[0]

    def add_fact(self, text: str, role: str | None = None) -> Entry:
        """A fact the user states: explicit, so it may mature at once (policy)."""
        scope = private(role) if role else SHARED
        text = ensure_clean(clean_text(ensure_clean(text)))  # raw and cleaned: both screened
        if not text:
            raise UserError("the fact is empty")
        cand = Candidate(text, "user", 0, ("user",), "user", "user")
        stats = self.merge(scope, [cand])
        self.record_event("add", memory=scope.label, item=stats.ids[0])
        return self.find(stats.ids[0])

    def edit(self, item_id: str, text: str) -> Entry:
        """Correct an item: the new text is a user statement that supersedes the old item,
        which stays (retired) so `why` can show what was corrected."""
        text = ensure_clean(clean_text(ensure_clean(text)))
        if not text:
            raise UserError("the new text is empty: use `ima memory forget` to remove an item")
        entry = self.find(item_id)
        old_id, scope = entry.item.id, entry.scope
        new_ids: list[str] = []

        def change(doc: ScopeDoc) -> bool:
            old = doc.items.get(old_id)
            if old is None:
                raise UnknownItem(f"memory item {old_id} was removed meanwhile")
            now = self.now()
            fresh = new_item(doc.kind, doc.scope, text, "user", now)
            doc.blocked.pop(fresh.key, None)
            item = doc.items.setdefault(fresh.id, fresh)
            item.source, item.text = "user", text
            if item is not old:
                item.replaces = old_id
                old.superseded_by, old.superseded_why = item.id, "edit"
            merge(
                doc,
                [Candidate(text, "user", 0, ("user",), "user", "user")],
                self.policy(scope),
                now,
            )
            resolve_conflicts(doc, self.policy(scope), now)
            new_ids[:] = [item.id]
            return True

        self.update(scope, change)
        self.record_event("edit", memory=scope.label, item=old_id, new_item=new_ids[0])
        return self.find(new_ids[0])

    def forget(self, item_id: str) -> Entry:
        """Remove an item and block it from being learned again; its text is purged from
        the kept history too."""
        entry = self.find(item_id)

        def change(doc: ScopeDoc) -> bool:
            item = doc.items.pop(entry.item.id, None)
            if item is None:
                return False
            doc.blocked[item.key] = self.now()
            for other in doc.items.values():  # items it had superseded compete again
                if other.superseded_by == item.id and other.superseded_why == "conflict":
                    other.superseded_by = other.superseded_why = ""
            resolve_conflicts(doc, self.policy(entry.scope), self.now())
            return True

        doc = self.update(entry.scope, change)
        self._prune(namespace(self.principal, entry.scope), doc.rev, keep=1)
        self.record_event("forget", memory=entry.scope.label, item=entry.item.id)
        return entry

    def reset(self, scopes: list[Scope]) -> int:
        """Empty the given scopes (forget-blocks too); returns how many items went."""
        removed = 0
        for scope in scopes:
            counted: list[int] = []

            def change(doc: ScopeDoc, counted: list[int] = counted) -> bool:
                counted[:] = [len(doc.items)]
                if not doc.items and not doc.blocked:
                    return False
                doc.items.clear()
                doc.blocked.clear()
                return True

            doc = self.update(scope, change)
            if doc.rev:
                self._prune(namespace(self.principal, scope), doc.rev, keep=1)
            removed += counted[0]
            self.record_event("reset", memory=scope.label, items=counted[0])
        return removed

    # -- audit ----------------------------------------------------------------------

    def record_event(self, action: str, **detail: Any) -> None:
        """Append an audit event (ids, scopes, counts; never item text). Unique keys make
        events append-only without a conditional write. Expired events are deleted."""
        reserved = {"principal", "kind", "scope", "action", "at"} & set(detail)
        if reserved:
            raise LongTermError(f"audit detail may not set {sorted(reserved)}")
        now = self.now()
        ns = namespace(self.principal, AUDIT)
        value = {
            "principal": self.principal,
            "kind": AUDIT.kind,
            "scope": AUDIT.token,
            "action": action,
            "at": now,
            **detail,
        }
        for v in detail.values():  # separately: joined numbers could look like a card number
            ensure_clean(str(v))
        key = f"ev-{int(now * 1000):015d}-{uuid.uuid4().hex[:8]}"
        self._guard(lambda: self._store.put(ns, key, value, index=False))
        limit = self.policies.default.retention_days * DAY
        for old in self.events(raw=True):
            if now - old["at"] > limit:
                self._guard(lambda old=old: self._store.delete(ns, old["key"]))

    def events(self, *, raw: bool = False) -> list[dict[str, Any]]:
        ns = namespace(self.principal, AUDIT)
        found = self._guard(lambda: self._store.search(ns, limit=100000))
        out = []
        for item in found:
            value = check_in_scope(self.principal, AUDIT, item.namespace, item.value)
            out.append({**value, "key": item.key} if raw else dict(value))
        return sorted(out, key=lambda e: e["at"])
