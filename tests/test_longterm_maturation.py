"""The maturation gate, decay, explicit facts, conflicts, retention and per-role policy,
driven by an injected clock."""

from __future__ import annotations

import pytest
from langgraph.store.memory import InMemoryStore

from ima.core.errors import UserError
from ima.longterm import MemoryHub, Policy, PolicySet, RunOutcome, learn, load_policy
from ima.longterm.namespaces import private
from ima.longterm.policy import DAY, parse_policy

LESSON = "Storage format: Parquet on object storage"
MEMORY = f"## Decisions and current status\n- {LESSON}\n"


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, days: float) -> None:
        self.now += days * DAY


@pytest.fixture
def clock() -> Clock:
    return Clock()


def make_hub(clock: Clock, policies: PolicySet | None = None) -> MemoryHub:
    # Any BaseStore works; the in-memory one keeps these tests fast.
    return MemoryHub(InMemoryStore(), "alice", policies=policies, clock=clock)


def run(
    hub: MemoryHub, thread: str, status: str = "finalized", memory: str = MEMORY, role: str = "BOA"
):
    return learn(hub, RunOutcome(thread, status, {role: (memory, 4)}))


def state(hub: MemoryHub, role: str = "BOA", text: str = LESSON) -> str:
    (entry,) = [e for e in hub.entries([private(role)]) if e.item.text == text]
    return entry.status.state


def test_three_runs_within_the_window_mature_an_item(clock):
    hub = make_hub(clock)
    for n, expected in enumerate(["provisional", "provisional", "mature"]):
        run(hub, f"run{n}")
        assert state(hub) == expected
        clock.advance(10)


def test_the_same_run_twice_counts_once(clock):
    hub = make_hub(clock)
    for _ in range(3):
        run(hub, "run0")
    (entry,) = hub.entries([private("BOA")])
    assert entry.item.support_total == 1 and entry.status.state == "provisional"


def test_support_outside_the_window_does_not_count(clock):
    hub = make_hub(clock)
    for n in range(3):
        run(hub, f"run{n}")
        clock.advance(50)  # runs at day 0, 50, 100: at most two within any 90 days
    clock.now -= 50 * DAY
    assert state(hub) == "provisional"


def test_mature_items_decay_without_fresh_support_and_recover_with_it(clock):
    hub = make_hub(clock)
    for n in range(3):
        run(hub, f"run{n}")
    clock.advance(60)
    assert state(hub) == "mature"  # 60 days is still within the limit
    clock.advance(1)
    assert state(hub) == "provisional"
    (entry,) = hub.entries([private("BOA")])
    assert "decayed" in entry.status.reason
    run(hub, "run3")  # fresh support: 3 runs within 90 days again (days 0, 0, 0, 61)
    assert state(hub) == "mature"


def test_failed_runs_do_not_support_by_default(clock):
    hub = make_hub(clock)
    for n in range(5):
        run(hub, f"run{n}", status="failed")
    assert state(hub) == "provisional"
    statuses = PolicySet(default=Policy(supporting_statuses=("finalized", "failed")))
    hub.policies = statuses
    assert state(hub) == "mature"


def test_an_explicit_user_fact_matures_at_once(clock):
    hub = make_hub(clock)
    entry = hub.add_fact("Budget: 40k EUR per month", role="BOA")
    assert entry.status.state == "mature" and entry.item.source == "user"
    shared = hub.add_fact("All data stays in the EU region")
    assert shared.scope.kind == "shared" and shared.status.applied
    strict = make_hub(clock, PolicySet(default=Policy(explicit_matures=False)))
    assert strict.add_fact("Budget: 40k EUR per month", role="BOA").status.state == "provisional"


def test_thresholds_are_configurable_per_role(clock):
    policies = parse_policy(
        {
            "default": {"min_support": 3},
            "roles": {"BOA": {"min_support": 1}},
            "shared": {"min_support": 5},
        }
    )
    hub = make_hub(clock, policies)
    learn(hub, RunOutcome("run0", "finalized", {"BOA": (MEMORY, 2), "DEA": (MEMORY, 3)}))
    assert state(hub, "BOA") == "mature"
    assert state(hub, "DEA") == "provisional"
    assert hub.policy(hub.shared).min_support == 5
    assert hub.policy(private("DEA")).min_support == 3


def test_a_conflicting_item_supersedes_by_support_and_user_statements_win(clock):
    hub = make_hub(clock, PolicySet(default=Policy(min_support=1)))
    run(hub, "run0")
    run(hub, "run1")
    run(hub, "run2", memory="## Decisions\n- storage format: ORC files on HDFS\n")
    by_text = {e.item.text: e for e in hub.entries([private("BOA")])}
    assert by_text[LESSON].status.state == "mature"  # two runs beat one
    orc = by_text["storage format: ORC files on HDFS"]
    assert orc.status.state == "superseded" and orc.item.superseded_by == by_text[LESSON].item.id
    clock.advance(1)
    run(hub, "run3", memory="## Decisions\n- storage format: ORC files on HDFS\n")
    run(hub, "run4", memory="## Decisions\n- storage format: ORC files on HDFS\n")
    assert state(hub, text="storage format: ORC files on HDFS") == "mature"  # 3 beats 2
    assert state(hub) == "superseded"
    hub.add_fact("Storage format: Delta Lake tables", role="BOA")
    assert state(hub, text="Storage format: Delta Lake tables") == "mature"
    assert state(hub, text="storage format: ORC files on HDFS") == "superseded"


def test_items_expire_after_the_retention_period(clock):
    hub = make_hub(clock, PolicySet(default=Policy(retention_days=30)))
    run(hub, "run0")
    clock.advance(31)
    (entry,) = hub.entries([private("BOA")])
    assert entry.status.state == "expired" and not entry.status.applied
    run(hub, "run1", memory="## Decisions\n- Ingest through Kafka topics\n")  # any write purges
    assert [e.item.text for e in hub.entries([private("BOA")])] == ["Ingest through Kafka topics"]


def test_forget_blocks_relearning_and_edit_supersedes(clock):
    hub = make_hub(clock, PolicySet(default=Policy(min_support=1)))
    run(hub, "run0")
    (entry,) = hub.entries([private("BOA")])
    hub.forget(entry.item.id)
    report = run(hub, "run1")
    assert report.blocked == 1 and hub.entries([private("BOA")]) == []
    hub.add_fact(LESSON, role="BOA")  # the user may state it again: that lifts the block
    (entry,) = hub.entries([private("BOA")])
    edited = hub.edit(entry.item.id, "Storage format: Iceberg tables on object storage")
    assert edited.status.state == "mature" and edited.item.replaces == entry.item.id
    old = hub.find(entry.item.id)
    assert old.status.state == "superseded" and old.item.superseded_why == "edit"
    run(hub, "run2")  # the corrected lesson comes back from a run: the correction still holds
    assert hub.find(entry.item.id).status.state == "superseded"
    assert [e["action"] for e in hub.events()] == [
        "learn",
        "forget",
        "learn",
        "add",
        "edit",
        "learn",
    ]


def test_policy_file_is_validated(tmp_path):
    good = tmp_path / "policy.toml"
    good.write_text(
        "[default]\nmin_support = 2\n[roles.BOA]\ndecay_days = 10\n[limits]\nmax_shared = 1\n"
    )
    policies = load_policy(good)
    assert policies.default.min_support == 2
    assert policies.roles["BOA"] == Policy(min_support=2, decay_days=10)  # inherits [default]
    assert policies.limits.max_shared == 1
    for text, message in [
        ("[default]\nmin_suport = 2\n", "unknown key 'min_suport'"),
        ("[default]\nmin_support = -1\n", "must be a number >= 0"),
        ("[nope]\n", "unknown table [nope]"),
        ("[default]\nsupporting_statuses = 'finalized'\n", "list of strings"),
        ("[default\n", "not valid TOML"),
    ]:
        bad = tmp_path / "bad.toml"
        bad.write_text(text)
        with pytest.raises(UserError, match=message.replace("[", r"\[")):
            load_policy(bad)
    with pytest.raises(UserError, match="cannot read"):
        load_policy(tmp_path / "missing.toml")
