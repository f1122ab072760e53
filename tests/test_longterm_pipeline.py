"""Drafting lessons from intrinsic memory, and the starting memory built from them."""

from __future__ import annotations

from intrinsic_memory import MemoryTemplate
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.store.memory import InMemoryStore

from ima.core.tokens import count_tokens
from ima.longterm import LlmDrafter, MemoryHub, Policy, PolicySet, RunOutcome, learn
from ima.longterm.namespaces import private
from ima.longterm.pipeline import rule_drafter
from ima.longterm.policy import Limits
from ima.longterm.retrieval import starting_memory
from ima.prompts import load

GENERIC_MEMORY = """## Task goal
- Design a data pipeline for the test fleet
## Key requirements and constraints
- Ingest 2,000 vehicles at 100 TB/day
- <requirement, with its figure>
- ok
## My contributions so far
- I proposed Kafka for ingestion
## Decisions and current status
1. **Storage format**: Parquet on object storage
* Ingest through Kafka topics.
- Ingest through kafka topics
Agreed:
- Train models nightly on spot GPUs
"""


def test_rule_drafter_takes_bullets_under_decision_and_requirement_headings():
    assert rule_drafter("BOA", GENERIC_MEMORY, "finalized") == [
        "Ingest 2,000 vehicles at 100 TB/day",
        "Storage format: Parquet on object storage",
        "Ingest through Kafka topics",
        "Train models nightly on spot GPUs",
    ]


def test_the_generic_template_alone_drafts_nothing():
    assert rule_drafter("BOA", MemoryTemplate.generic().markdown(), "finalized") == []


def test_llm_drafter_uses_its_prompt_and_accounts_its_calls():
    model = FakeListChatModel(
        responses=["- storage format: Parquet\n- Ingest through Kafka topics\nnot a bullet"]
    )
    drafter = LlmDrafter(model, limit=5)
    assert drafter("BOA", GENERIC_MEMORY, "finalized") == [
        "storage format: Parquet",
        "Ingest through Kafka topics",
    ]
    assert drafter.usage["BOA"]["calls"] == 1


def test_run_outcome_skips_slots_the_run_never_rewrote():
    values = {
        "status": "finalized",
        "intrinsic_memory": {
            "BOA": {"text": GENERIC_MEMORY, "version": 3, "turn": 9},
            "IA": {
                "text": "## Lessons from my earlier runs\n- old",
                "version": 0,
                "turn": 0,
            },
        },
    }
    outcome = RunOutcome.from_values("t1", values)
    assert outcome.memories == {"BOA": (GENERIC_MEMORY, 9)} and outcome.status == "finalized"


def _mature_hub(**limits) -> MemoryHub:
    policies = PolicySet(default=Policy(min_support=1), limits=Limits(**limits))
    return MemoryHub(InMemoryStore(), "alice", policies=policies)


def test_shared_lessons_need_several_agents_and_keep_provenance():
    hub = _mature_hub()
    memories = {
        "BOA": ("## Decisions\n- Storage format: Parquet on object storage\n- Budget first\n", 4),
        "DEA": ("## Decisions\n- storage format: parquet on object storage.\n", 6),
    }
    learn(hub, RunOutcome("run0", "finalized", memories))
    (shared,) = hub.read(hub.shared).items.values()
    assert shared.text == "Storage format: Parquet on object storage"
    (support,) = shared.support
    assert (support.thread, support.turn, support.agents, support.status) == (
        "run0",
        6,
        ["BOA", "DEA"],
        "finalized",
    )


def test_starting_memory_loads_mature_private_then_shared_items():
    hub = _mature_hub()
    learn(
        hub,
        RunOutcome(
            "run0",
            "finalized",
            {
                "BOA": (
                    "## Decisions\n- Storage format: Parquet on object storage\n- Budget first always\n",
                    4,
                ),
                "DEA": ("## Decisions\n- Storage format: Parquet on object storage\n", 5),
            },
        ),
    )
    hub.add_fact("Ingestion: Kafka with 7 days retention")  # shared, explicit
    loaded = starting_memory(hub, ["BOA", "MLA"], 500)
    boa, mla = loaded.texts["BOA"], loaded.texts["MLA"]
    assert boa.startswith(load("longterm_private").split("\n")[0])
    assert "- Budget first always" in boa and "- Storage format: Parquet on object storage" in boa
    assert boa.count("Parquet") == 1  # the shared copy does not repeat BOA's own item
    assert "- Ingestion: Kafka with 7 days retention" in boa
    assert mla.startswith(load("longterm_shared").split("\n")[0]) and "Parquet" in mla
    report = loaded.report
    assert report["loaded"] == {"private": 2, "shared": 2}
    assert (
        len(report["roles"]["BOA"]["shared"]) == 1
        and report["roles"]["BOA"]["shared_shadowed"] == 1
    )
    assert "Parquet" not in repr(report)  # ids and counts only


def test_shared_items_cannot_override_a_roles_own_belief():
    hub = _mature_hub()
    hub.add_fact("Storage format: ORC on HDFS", role="BOA")
    hub.add_fact("Storage format: Parquet on object storage")
    loaded = starting_memory(hub, ["BOA", "DEA"], 500)
    assert "ORC" in loaded.texts["BOA"] and "Parquet" not in loaded.texts["BOA"]
    assert "Parquet" in loaded.texts["DEA"]


def test_provisional_items_are_stored_but_not_applied():
    hub = MemoryHub(InMemoryStore(), "alice")  # default: 3 runs to mature
    learn(
        hub, RunOutcome("run0", "finalized", {"BOA": ("## Decisions\n- Budget first always\n", 1)})
    )
    assert len(hub.entries()) == 1
    assert starting_memory(hub, ["BOA"], 500).texts == {"BOA": ""}


def test_the_budget_and_item_limits_bound_starting_memory():
    hub = _mature_hub(max_private=3, max_shared=1)
    for n in range(6):
        hub.add_fact(f"Private lesson number {n} about the pipeline design", role="BOA")
        hub.add_fact(f"Shared lesson number {n} about the team process")
    loaded = starting_memory(hub, ["BOA"], 1000)
    boa = loaded.report["roles"]["BOA"]
    assert len(boa["private"]) == 3 and len(boa["shared"]) == 1
    assert boa["skipped_limit"] == (6 - 3) + (6 - 1) and boa["skipped_budget"] == 0
    for budget in (0, 20, 40, 60):
        text = starting_memory(hub, ["BOA"], budget).texts["BOA"]
        assert (count_tokens(text) if text else 0) <= budget
    tight = starting_memory(hub, ["BOA"], 40).report["roles"]["BOA"]
    assert tight["skipped_budget"] > 0 and tight["tokens"] <= 40


def test_private_memory_is_per_role():
    hub = _mature_hub()
    hub.add_fact("Budget: 40k EUR per month", role="BOA")
    loaded = starting_memory(hub, ["BOA", "DEA"], 500)
    assert "40k" in loaded.texts["BOA"] and loaded.texts["DEA"] == ""
    assert [s.label for s in hub.scopes()] == ["BOA", "shared"]
    assert hub.read(private("DEA")).rev == 0
