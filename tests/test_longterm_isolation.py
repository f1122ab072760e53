"""Principal A can neither read nor write principal B's long-term memory, by any path."""

from __future__ import annotations

import pytest

from ima.longterm import (
    InvalidToken,
    MemoryHub,
    MemoryUnavailable,
    RunOutcome,
    ScopeViolation,
    UnknownItem,
    learn,
)
from ima.longterm.namespaces import ROOT, Scope, namespace, private, resolve_principal, safe_token
from ima.longterm.retrieval import starting_memory
from ima.longterm.revisions import Revision
from ima.runs.database import open_memory_hub

CRAFTED = ["../B", "a/b", "", "B\x00", "..", ".", "a.b", "B\n", " B", "B ", "B/../A", "x" * 65, "é"]
MEMORY = (
    "## Decisions\n- Storage format: Parquet on object storage\n- Ingest through Kafka topics\n"
)


@pytest.fixture
def hubs(memory_target):
    """Two principals on one store, on each backend."""
    with open_memory_hub(memory_target, "A") as a, open_memory_hub(memory_target, "B") as b:
        yield a, b


@pytest.mark.parametrize("bad", [*CRAFTED, None, 3])
def test_crafted_tokens_are_refused_everywhere(hubs, bad):
    a, _ = hubs
    with pytest.raises(InvalidToken):
        safe_token(bad)
    with pytest.raises(InvalidToken):
        private(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidToken):
        Scope("private", bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidToken):
        MemoryHub(a.store, bad)  # type: ignore[arg-type]
    if bad:  # "" means "no role": a shared fact, which is allowed
        with pytest.raises(InvalidToken):
            a.add_fact("Use Parquet for raw logs", role=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidToken):
        learn(a, RunOutcome("t1", "finalized", {bad: (MEMORY, 3)}))  # type: ignore[dict-item]
    assert a.entries() == []  # nothing was written by any attempt


@pytest.mark.parametrize("bad", ["../B", "a/b", "B\x00", "a.b", "B\n"])
def test_crafted_principal_is_refused(bad, monkeypatch):
    with pytest.raises(InvalidToken):
        resolve_principal(bad)
    monkeypatch.setenv("IMA_PRINCIPAL", bad.replace("\x00", "/"))  # env cannot hold NUL
    with pytest.raises(InvalidToken):
        resolve_principal("")


def test_unknown_kind_and_second_shared_scopes_are_refused():
    for kind, token in [("secret", "x"), ("shared", "B"), ("audit", "B"), ("shared", "../team")]:
        with pytest.raises(InvalidToken):
            Scope(kind, token)  # type: ignore[arg-type]


def test_os_user_that_is_not_a_token_is_hashed_not_rewritten(monkeypatch):
    monkeypatch.delenv("IMA_PRINCIPAL", raising=False)
    monkeypatch.setattr("getpass.getuser", lambda: "john.doe")
    first = resolve_principal("")
    monkeypatch.setattr("getpass.getuser", lambda: "john-doe")
    assert first.startswith("u-") and safe_token(first) == first
    assert resolve_principal("") == "john-doe" != first


def test_a_cannot_see_or_change_b(hubs):
    a, b = hubs
    learn(b, RunOutcome("b-run", "finalized", {"BOA": (MEMORY, 3), "DEA": (MEMORY, 4)}))
    fact = b.add_fact("Budget: 40k EUR per month", role="BOA")
    before = [(e.scope, e.item.text, e.item.support_total) for e in b.entries()]
    assert a.entries() == [] and a.events() == []
    for item_id in [fact.item.id, fact.item.id[:6]] + [e.item.id for e in b.entries()]:
        with pytest.raises(UnknownItem):
            a.find(item_id)
        with pytest.raises(UnknownItem):
            a.edit(item_id, "Budget: 1 EUR")
        with pytest.raises(UnknownItem):
            a.forget(item_id)
    for crafted in ["../" + fact.item.id, "B/" + fact.item.id, "", "zz", fact.item.id + "\x00"]:
        with pytest.raises(UnknownItem):
            a.find(crafted)
    a.reset(a.scopes())
    loaded = starting_memory(a, ["BOA", "DEA"], 1000)
    assert loaded.texts == {"BOA": "", "DEA": ""}
    assert [(e.scope, e.item.text, e.item.support_total) for e in b.entries()] == before
    # the memory-agent idiom: every record lives under its own principal's namespace
    spaces = a.store.list_namespaces(prefix=(ROOT,), limit=1000)
    assert {ns[1] for ns in spaces} == {"A", "B"}  # A wrote only its reset audit events
    for ns in spaces:
        assert {it.value["principal"] for it in a.store.search(ns, limit=1000)} == {ns[1]}
    assert [e["action"] for e in a.events()] == ["reset"]


def _plant(hub: MemoryHub, scope: Scope, found_ns: tuple[str, ...], value: dict) -> None:
    """Write a body and claim it as head, bypassing the hub's own writes."""
    head = hub._log.head(namespace(hub.principal, scope), "doc")
    rev = (head.rev if head else 0) + 1
    hub.store.put(found_ns, f"doc~{rev:08d}~planted", value, index=False)
    hub._log.claim(
        namespace(hub.principal, scope), "doc", Revision(rev, f"doc~{rev:08d}~planted", "x", 0)
    )


def test_a_record_labelled_for_b_in_as_namespace_is_refused(hubs):
    a, b = hubs
    b.add_fact("Budget: 40k EUR per month", role="BOA")
    stolen = b.store.search(namespace("B", private("BOA")), limit=10)[0].value
    _plant(a, private("BOA"), namespace("A", private("BOA")), stolen)  # B's record, A's place
    with pytest.raises(ScopeViolation):
        a.read(private("BOA"))
    loaded = starting_memory(a, ["BOA"], 1000)
    assert loaded.texts == {"BOA": ""} and loaded.report["refused_scopes"] == ["BOA"]


def test_a_record_claimed_in_as_log_but_stored_elsewhere_is_refused(hubs):
    a, _ = hubs
    value = {"principal": "A", "kind": "private", "scope": "BOA", "items": {}, "blocked": {}}
    a.store.put(("elsewhere",), "doc~00000001~planted", value, index=False)
    a._log.claim(namespace("A", private("BOA")), "doc", Revision(1, "doc~00000001~planted", "x", 0))
    # the claimed body is not in A's namespace, and the hub reads A's namespace only
    with pytest.raises(MemoryUnavailable):
        a.read(private("BOA"))
