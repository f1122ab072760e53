"""`ima memory list|show|why|edit|forget|reset|add|audit`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ima.cli.memory import memory_app
from ima.core.errors import UserError
from ima.longterm import Policy, PolicySet, RunOutcome, learn
from ima.runs.database import open_memory_hub

MEMORY = (
    "## Decisions\n- Storage format: Parquet on object storage\n- Ingest through Kafka topics\n"
)


@pytest.fixture
def store(memory_target, monkeypatch):
    """A store with two runs' lessons, on each backend (`--store` takes a file or a URL)."""
    monkeypatch.setenv("IMA_PRINCIPAL", "alice")
    monkeypatch.setenv("COLUMNS", "200")
    path = memory_target
    policies = PolicySet(default=Policy(min_support=2))
    with open_memory_hub(path, "alice", policies=policies) as hub:
        learn(hub, RunOutcome("run-1", "finalized", {"BOA": (MEMORY, 4), "DEA": (MEMORY, 6)}))
        learn(hub, RunOutcome("run-2", "finalized", {"BOA": (MEMORY, 5)}))
    return path


def ima_memory(store, *args: str):
    result = CliRunner().invoke(memory_app, [*args, "--store", str(store)])
    if isinstance(result.exception, UserError):
        return 2, str(result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def items(store, *args: str) -> list[dict]:
    code, out = ima_memory(store, "list", "--json", *args)
    assert code == 0
    return json.loads(out)


def boa_parquet(store) -> dict:
    (item,) = [i for i in items(store, "--role", "BOA") if "Parquet" in i["text"]]
    return item


def test_list_shows_items_per_agent_and_shared_with_status_and_support(store):
    code, out = ima_memory(store, "list")
    assert code == 0
    assert "Long-term memory (6 items)" in out
    for word in ("BOA", "DEA", "shared", "provisional", "2/3 (2 total)", "1/3 (1 total)"):
        assert word in out
    assert {i["memory"] for i in items(store)} == {"BOA", "DEA", "shared"}
    assert {i["memory"] for i in items(store, "--shared")} == {"shared"}


def test_show_and_why_explain_support_provenance_and_whether_applied(store):
    item = boa_parquet(store)
    code, out = ima_memory(store, "show", item["id"][:6])
    assert code == 0 and "Storage format: Parquet on object storage" in out
    code, out = ima_memory(store, "why", item["id"])
    assert code == 0 and "not applied" in out and "2 of 3 supporting runs" in out
    assert "run-1" in out and "run-2" in out
    code, out = ima_memory(store, "why", item["id"], "--json")
    why = json.loads(out)
    assert [p["thread"] for p in why["provenance"]] == ["run-1", "run-2"]
    assert why["applied"] is False and why["policy"]["min_support"] == 3


def test_edit_forget_and_add_are_recorded(store):
    item = boa_parquet(store)
    code, out = ima_memory(store, "edit", item["id"], "Storage format: Iceberg tables")
    assert code == 0 and "mature" in out
    new = next(i for i in items(store, "--role", "BOA") if "Iceberg" in i["text"])
    assert new["applied"] and new["replaces"] == item["id"]
    assert item["id"] not in {i["id"] for i in items(store)}  # corrected items are hidden...
    assert item["id"] in {i["id"] for i in items(store, "--all")}  # ...but kept
    code, out = ima_memory(store, "why", new["id"])
    assert "Corrections" in out and "edit" in out
    code, _ = ima_memory(store, "forget", new["id"])
    assert code == 0 and new["id"] not in {i["id"] for i in items(store, "--all")}
    code, _ = ima_memory(store, "add", "Budget: 40k EUR per month", "--role", "MLA")
    assert code == 0 and items(store, "--role", "MLA")[0]["status"] == "mature"
    code, out = ima_memory(store, "audit", "--json")
    assert [e["action"] for e in json.loads(out)] == ["learn", "learn", "edit", "forget", "add"]
    assert "Iceberg" not in out and "Budget" not in out  # the audit log holds ids, not text


def test_reset(store):
    code, msg = ima_memory(store, "reset")
    assert code == 2 and "exactly one of" in msg
    code, msg = ima_memory(store, "reset", "--role", "BOA")
    assert code == 2 and "--yes" in msg
    code, out = ima_memory(store, "reset", "--role", "BOA", "--yes")
    assert code == 0 and "2 items removed" in out
    assert {i["memory"] for i in items(store)} == {"DEA", "shared"}
    code, out = ima_memory(store, "reset", "--all", "--yes")
    assert code == 0 and items(store) == []


@pytest.mark.parametrize("bad", ["nope", "../x", "0000000000", "a/b"])
def test_bad_ids_are_one_line_errors(store, bad):
    for command in (["show", bad], ["why", bad], ["forget", bad], ["edit", bad, "text"]):
        code, msg = ima_memory(store, *command)
        assert code == 2 and "\n" not in msg and "ima memory list" in msg


def test_bad_role_and_refused_text_are_one_line_errors(store):
    code, msg = ima_memory(store, "list", "--role", "../B")
    assert code == 2 and "invalid role" in msg
    code, msg = ima_memory(store, "add", "Mail jane.doe@example.com for access")
    assert code == 2 and "e-mail address" in msg and "jane" not in msg


def test_missing_and_unusable_stores(tmp_path, monkeypatch):
    monkeypatch.setenv("IMA_PRINCIPAL", "alice")
    missing = tmp_path / "none.sqlite"
    code, out = ima_memory(missing, "list")
    assert code == 0 and "no long-term memory yet" in out
    code, msg = ima_memory(missing, "show", "abcdef")
    assert code == 2 and "no long-term memory at" in msg
    assert not missing.exists()
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"garbage" * 200)
    code, msg = ima_memory(broken, "list")
    assert code == 2 and "cannot open long-term memory store" in msg


def test_principals_see_only_their_own_memory(store, monkeypatch):
    alice_item = boa_parquet(store)["id"]
    monkeypatch.setenv("IMA_PRINCIPAL", "bob")
    assert items(store) == []
    for command in (["show", alice_item], ["forget", alice_item], ["edit", alice_item, "x y z"]):
        code, msg = ima_memory(store, *command)
        assert code == 2 and "no memory item" in msg
    monkeypatch.setenv("IMA_PRINCIPAL", "alice")
    assert boa_parquet(store)["id"] == alice_item


def test_a_fact_for_a_role_no_task_has_is_refused_unless_asked_for(store, tmp_path, monkeypatch):
    """No agent would ever load it: refused, naming the known roles; --any-role stores it
    for a task not installed here; a recorded run's own task makes its roles known."""
    monkeypatch.chdir(tmp_path)  # the runs database is runs/ima.sqlite here: none yet
    monkeypatch.delenv("IMA_DB", raising=False)
    code, msg = ima_memory(store, "add", "Ingest through MQTT", "--role", "NOPE")
    assert code == 2 and "no task here has a role 'NOPE'" in msg, msg
    assert "BOA, CDA, DEA" in msg and "--any-role" in msg and "\n" not in msg
    assert not [i for i in items(store) if "MQTT" in i["text"]]

    code, _ = ima_memory(store, "add", "Ingest through MQTT", "--role", "NOPE", "--any-role")
    assert code == 0
    assert [i["memory"] for i in items(store) if "MQTT" in i["text"]] == ["NOPE"]

    from ima.core.settings import RunContext
    from ima.runs.runner import create_run
    from ima.tasks import available_tasks

    text = available_tasks()["data-pipeline"].read_text(encoding="utf-8")
    (tmp_path / "fleet.yaml").write_text(text.replace("BOA", "ZED"), encoding="utf-8")
    create_run(
        task_ref=str(tmp_path / "fleet.yaml"),
        memory_mode="intrinsic",
        settings=RunContext(model="scripted", long_term=False),
        db=tmp_path / "runs" / "ima.sqlite",
        out_root=tmp_path / "runs",
    )
    code, msg = ima_memory(store, "add", "Budget: 40k EUR per month", "--role", "ZED")
    assert code == 0, msg
