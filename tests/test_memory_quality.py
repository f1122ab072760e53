"""Memory retention and repairs, measured without a model: against hand-counted values, and
as a user sees them (run.json, `ima show`, the run's page, the eval report's rows)."""

from __future__ import annotations

import json
import re

import pytest
from conftest import remembered_turns, stored_state
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver

from ima.core.settings import RunContext
from ima.evals.metrics import metrics_for
from ima.measures.memory_quality import (
    memory_prompt_sources,
    memory_report,
    repair_totals,
    retention,
    retention_by_agent,
    retention_summary,
)
from ima.meeting.builder import compile_graph
from ima.models.scripted import ScriptedChatModel
from ima.runs.outputs import run_record
from ima.view import render_view

PROMPT_COPY = (
    "Keep every requirement, figure, proposal and decision that still matters to your role."
)


def test_retention_counts_the_key_figures_and_requirements_a_memory_holds(task):
    memory = (
        "## Key requirements and constraints\n"
        "- Fleet records 80 TB/day; 12 TB/day go over depot Wi-Fi\n"
        "- Safety events reach the dashboard in 5 min over cellular.\n"
        "## Decisions and current status\n"
        "- Budget: USD 45,000 a month"
    )
    held = retention(task, memory, memory_prompt_sources())
    assert held.figures == ("recorded", "uploaded", "dashboard-latency", "budget")
    # R1: wi-fi and cellular; R2: safety event, dashboard, 5 min. R10 needs storage, GPU and
    # network too, so the budget alone does not cover it.
    assert held.requirements == ("R1", "R2")
    assert held.items == len(task.key_figures) + len(task.requirements) == 36
    assert held.share == pytest.approx(6 / 36)
    assert held.parroting == 0


def test_a_memory_that_repeats_its_prompt_is_parroting_and_its_headings_do_not_count(task):
    sources = memory_prompt_sources(["## Decisions\n- <what was decided, and by whom>"])
    parrot = f"## Notes\n- {PROMPT_COPY}\n- what was decided, and by whom"
    held = retention(task, parrot, sources)
    assert held.parroting == 1.0 and held.share == 0
    # A copied note beside one of its own: only the copied 5-grams count.
    mixed = retention(
        task, f"- {PROMPT_COPY}\n- DEA sizes ingest for twelve terabytes per night now ok", sources
    )
    grams_copied, grams_own = 13 - 5 + 1, 10 - 5 + 1  # 13 words copied, 10 its own
    assert mixed.parroting == pytest.approx(grams_copied / (grams_copied + grams_own))
    # The same words as a heading are the template's, not the memory's.
    assert retention(task, f"## {PROMPT_COPY}", sources).parroting is None
    # A note too short for a 5-gram counts once: copied when the prompt holds it whole.
    short = retention(task, "- Update your memory\n- 80 TB/day\n- depot uplink saturated", sources)
    assert short.parroting == pytest.approx(1 / 3)


def test_retention_over_a_run_weighs_each_agent_the_same_and_skips_the_start(task):
    log = [
        {"role": "DEA", "version": 0, "turn": 0, "text": "- 80 TB/day"},  # not the agent's work
        {"role": "DEA", "version": 1, "turn": 2, "text": "- nothing yet"},
        {"role": "DEA", "version": 2, "turn": 6, "text": "- 80 TB/day and 12 TB/day"},
        {"role": "IA", "version": 1, "turn": 4, "text": "- 99.9% availability"},
    ]
    summary = retention_summary(retention_by_agent(task, log))
    dea, ia = summary["agents"]["DEA"], summary["agents"]["IA"]
    assert [v["turn"] for v in dea["versions"]] == [2, 6]
    assert dea["end"] == pytest.approx(2 / 36) and dea["over_run"] == pytest.approx(1 / 36)
    assert ia["end"] == ia["over_run"] == pytest.approx(1 / 36)
    assert summary["end"] == pytest.approx((2 / 36 + 1 / 36) / 2)
    assert summary["over_run"] == pytest.approx((1 / 36 + 1 / 36) / 2)
    # Own items: the volumes are DEA's (23 items), availability is IA's (18).
    assert dea["own_end"] == pytest.approx(2 / 23) and dea["own_over_run"] == pytest.approx(1 / 23)
    assert [v["own_held"] for v in dea["versions"]] == [[], ["recorded", "uploaded"]]
    assert ia["own_end"] == pytest.approx(1 / 18)
    assert summary["own_end"] == pytest.approx((2 / 23 + 1 / 18) / 2)
    assert retention_summary({}) == {
        "end": None,
        "over_run": None,
        "own_end": None,
        "own_over_run": None,
        "parroting": None,
        "items": None,
        "agents": {},
    }


class CuttingMemoryModel(ScriptedChatModel):
    """Writes memories like the scripted model, but every second rewrite runs into the output
    cap mid-note, and every edit answer holds one malformed edit beside its real ones."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        result = super()._generate(messages, stop, run_manager, **kwargs)
        message = result.generations[0].message
        ask = str(messages[-1].content)
        text = str(message.content)
        reason = "stop"
        if ask.startswith("# Update your memory") and int(self._digest(ask), 16) % 2:
            text, reason = text[: text.rindex('"')] + " CUT-OFF-FRAGMENT", "length"
        elif ask.startswith("# Edit your memory"):
            edits = json.loads(text)["edits"] + [{"in": "decisions_current", "remove": 99}]
            text = json.dumps({"edits": edits})
        reply = AIMessage(
            text, usage_metadata=message.usage_metadata, response_metadata={"finish_reason": reason}
        )
        return ChatResult(generations=[ChatGeneration(message=reply)])

    @staticmethod
    def _digest(text: str) -> str:
        import hashlib

        return hashlib.sha256(text.encode()).hexdigest()[:8]


@pytest.fixture(scope="module", params=["rewrite", "edit"])
def repaired_run(request, task):
    graph = compile_graph(
        task, "intrinsic", memory_model=CuttingMemoryModel(), checkpointer=InMemorySaver()
    )
    # Which answers get cut depends on the prompt, so the budget is pinned: at 512 one first
    # write is cut before any section and rightly stored as no version, breaking the counts.
    context = RunContext(
        model="scripted", long_term=False, memory_update=request.param, memory_tokens=256
    )
    values = graph.invoke({}, {"configurable": {"thread_id": "cut"}}, context=context)
    return request.param, values


def test_answers_cut_off_or_malformed_are_repaired_never_stored_and_counted(repaired_run, task):
    mode, values = repaired_run
    log = [v for v in values["memory_log"] if v["version"]]
    assert not any("CUT-OFF-FRAGMENT" in v["text"] for v in log)  # nothing cut is stored
    assert all(v["mode"] == mode for v in log)
    totals = repair_totals(values["memory_log"])
    assert totals["updates"] == len(log) == len(remembered_turns(values))
    if mode == "rewrite":
        cut = [v for v in log if v["cut_off"]]
        assert 0 < len(cut) < len(log)
        assert totals["cut_off"] == len(cut)
        assert totals["carried_sections"] >= len(cut)  # the cut section came from before
        assert all(v["repairs"]["carried_sections"] for v in cut)
    else:  # the first update writes the memory whole; every later one edits it
        edited = [v for v in log if v["version"] > 1]
        assert edited and totals["malformed_edits"] == len(edited)  # one each, changing nothing
        assert totals["cut_off"] == sum(v["cut_off"] for v in log if v["version"] == 1)


def test_repairs_and_retention_reach_run_json_show_and_the_view(repaired_run, task):
    mode, values = repaired_run

    class Record:  # what run_record reads of a registry record
        thread_id, status, task_id, task_version, task_fingerprint = "cut", "", task.id, 2, ""
        memory_mode, settings, wall_seconds = "intrinsic", {"memory_update": mode}, 1.0

    record = run_record(Record(), values)
    assert record["memory_repairs"] == repair_totals(values["memory_log"])
    assert record["design_missing"] == []

    report = memory_report(task, values)
    # every agent with a memory (one whose every turn repeated the meeting has none)
    assert set(report["retention"]["agents"]) == {
        v["role"] for v in values["memory_log"] if v["version"]
    }
    shares = [v["retention"] for a in report["retention"]["agents"].values() for v in a["versions"]]
    assert len(shares) == len(remembered_turns(values)) and max(shares) > 0

    page = render_view(record | {"roles": {r.id: r.name for r in task.roles}}, values, task)
    assert 'id="retention-chart"' in page
    repairs = page.split('id="memory-repairs">', 1)[1].split("</p>", 1)[0]
    assert "answers cut off at the output cap" in repairs  # edit mode: in first writes
    assert ("malformed edits ignored" in repairs) == (mode == "edit")
    assert "key items" in page and "repaired:" in page
    # Own items beside all: a chart, each agent's header and each version's count.
    assert 'id="own-retention-chart"' in page and "own items (23)" in page
    assert re.search(r">\d+/23 own</span>", page) and re.search(r">\d+/36 own</span>", page)
    assert 'id="retention-chart"' not in render_view(record, values)  # no task: no retention
    everyone = task.model_copy(
        update={"roles": [r.model_copy(update={"owns": None}) for r in task.roles]}
    )
    plain = render_view(record, values, everyone)  # own items are all items: no second chart
    assert 'id="retention-chart"' in plain and 'id="own-retention-chart"' not in plain


def test_ima_show_gives_retention_per_agent_and_the_runs_repairs(cli):
    assert cli("run", "--model", "scripted", "--thread", "m1", "--memory-update", "edit")[0] == 0
    shown = json.loads(cli("show", "m1", "--json")[1])
    memory = shown["memory"]
    assert memory["repairs"]["updates"] == len(remembered_turns(stored_state("m1")))
    assert set(memory["retention"]["agents"]) == {t["speaker"] for t in shown["transcript"]}
    for agent in memory["retention"]["agents"].values():
        assert agent["end"] == agent["versions"][-1]["retention"]
    code, out, _ = cli("show", "m1")
    assert code == 0 and "Memory retention" in out and "memory updates; repairs" in out
    code, out, _ = cli("run", "--model", "scripted", "--thread", "b1", "--memory", "none")
    shown = json.loads(cli("show", "b1", "--json")[1])
    assert shown["memory"]["retention"]["end"] is None
    assert "Memory retention" not in cli("show", "b1")[1]


def test_the_eval_report_has_memory_rows_with_the_same_statistics(task):
    def row(end, run, cut):
        memory = {"retention_end": end, "retention_over_run": run, "parroting": 0.0}
        return {"content": {"memory": memory | {"cut_off": cut, "repairs": 2}}}

    rows = [row(0.25, 0.2, 0), row(0.5, 0.3, 1), {"content": {"memory": None}}]
    metrics = {m.name: m for m in metrics_for(rows)}
    assert [metrics["memory_retention_end"].get(r) for r in rows] == [25.0, 50.0, None]
    assert [metrics["memory_retention_run"].get(r) for r in rows] == [20.0, 30.0, None]
    assert [metrics["memory_cut_off"].get(r) for r in rows] == [0.0, 1.0, None]
    assert "memory_retention_end" not in {m.name for m in metrics_for([{"content": {}}])}
