"""What each agent's last turn had in view of its own key items: from hand-made states
(a known memory log and transcript, items present or absent), for intrinsic memory and the
baseline, and as a user sees it (run.json, `ima show`, the eval report's rows)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ima.core.state import zero_usage
from ima.evals.comparison import Cell
from ima.evals.report import markdown_report
from ima.measures.in_view import in_view_at_last_turn, memory_at_turn
from ima.runs.registry import RunRegistry
from ima.runs.runner import load_state


def turn(index: int, speaker: str, content: str, window: list[int] | None, memory: int = 400):
    """A transcript turn; `window`: the first and last turn its prompt held (None: a turn
    without a prompt, a person's); `memory`: the tokens of memory it showed (400: room for
    every memory here, nothing was cut)."""
    made: dict[str, Any] = {
        "index": index,
        "speaker": speaker,
        "phase": "discussion",
        "content": content,
        "flags": [],
        "tokens": 20,
        "usage": zero_usage(),
    }
    if window is not None:
        made["context"] = {
            "budget": 2048,
            "task": 900,
            "role": 80,
            "instruction": 60,
            "memory": memory,
            "history": 40 * len(window),
            "history_turns": window,
        }
    return made


DEA_MEMORY = "## Data volumes and sources\n- Depot Wi-Fi carries 12 TB/day\n- 80 TB/day recorded"
LOG = [
    {"role": "DEA", "version": 0, "turn": 0, "text": "", "template": "generic"},
    {"role": "MLA", "version": 0, "turn": 0, "text": "", "template": "generic"},
    {"role": "DEA", "version": 1, "turn": 1, "text": DEA_MEMORY, "template": "generic"},
    {"role": "MLA", "version": 1, "turn": 2, "text": "- 400 A100 GPU-hours", "template": "generic"},
    # formed from DEA's last turn, after its prompt: not in view then
    {"role": "DEA", "version": 2, "turn": 3, "text": "- dashboard in 5 min", "template": "generic"},
]
SLOTS = {
    "DEA": {"text": "- dashboard in 5 min", "kind": "generic", "version": 2, "turn": 3},
    "MLA": {
        "text": "- 400 A100 GPU-hours",
        "kind": "generic",
        "version": 1,
        "turn": 2,
        "lessons": "## Lessons\n- Retrain every two weeks",
    },
}


def transcript(windows: dict[int, list[int]]) -> list[dict[str, Any]]:
    return [
        turn(1, "DEA", "Depot offload over Wi-Fi, 12 TB/day.", windows[1]),
        turn(2, "MLA", "Label 50,000 frames a month; safety clips go over cellular.", windows[2]),
        turn(3, "DEA", "Safety events stream to the dashboard.", windows[3]),
        turn(4, "MLA", "Index 20 MB clips.", windows[4]),
        turn(5, "HUMAN", "Keep the 80 TB/day in mind.", None),  # no prompt: not an agent
    ]


def test_intrinsic_memory_counts_the_memory_before_the_turn_and_the_turns_shown(task):
    state = {
        "transcript": transcript({1: [], 2: [1, 1], 3: [2, 2], 4: [3, 3]}),
        "memory_log": LOG,
        "memories": SLOTS,
    }
    seen = in_view_at_last_turn(task, state)
    assert seen["memory"] is True and list(seen["agents"]) == ["DEA", "MLA"]
    dea, mla = seen["agents"]["DEA"], seen["agents"]["MLA"]
    # DEA at turn 3: memory v1 (its volumes, Wi-Fi) and turn 2 (cellular). Turn 1's words
    # left the window and v2 (the dashboard) came after: neither counts.
    assert (dea["turn"], dea["memory_version"], dea["window"]) == (3, 1, [2, 2])
    assert dea["held"] == ["recorded", "uploaded", "R1"]  # R1: Wi-Fi in memory, cellular in turn 2
    assert dea["in_memory"] == ["recorded", "uploaded"] and dea["in_window"] == []
    assert dea["share"] == pytest.approx(3 / 23) and dea["items"] == 23
    assert "dashboard-latency" in dea["missing"]
    # MLA at turn 4: its lessons (retraining) and memory v1 (GPU-hours); turn 3 holds
    # nothing of its own, and its own 50,000 frames of turn 2 are out of the window.
    assert (mla["memory_version"], mla["window"]) == (1, [3, 3])
    assert mla["held"] == ["retraining-cadence", "gpu-hours"]
    assert mla["share"] == pytest.approx(2 / 9)
    assert seen["mean"] == pytest.approx((3 / 23 + 2 / 9) / 2)


def test_the_baseline_counts_the_turns_shown_alone(task):
    # No memory: more room, so longer windows.
    state = {"transcript": transcript({1: [], 2: [1, 1], 3: [1, 2], 4: [1, 3]})}
    seen = in_view_at_last_turn(task, state)
    dea, mla = seen["agents"]["DEA"], seen["agents"]["MLA"]
    assert seen["memory"] is False and dea["memory_version"] is None
    assert dea["held"] == ["uploaded", "R1"] and dea["in_memory"] == []
    assert mla["held"] == ["labelled-frames"]  # turn 2 is in its window now
    assert seen["mean"] == pytest.approx((2 / 23 + 1 / 9) / 2)
    # A first turn sees no earlier turn: nothing in view.
    first = in_view_at_last_turn(task, {"transcript": transcript({1: [], 2: [], 3: [], 4: []})})
    assert first["mean"] == 0 and first["agents"]["DEA"]["window"] == []


def test_a_run_without_a_memory_log_uses_the_last_memory_only_when_it_came_before(task):
    state = {"transcript": transcript({1: [], 2: [1, 1], 3: [2, 2], 4: [3, 3]}), "memories": SLOTS}
    assert memory_at_turn(state, "DEA", 3) is None  # its last version came from turn 3
    assert memory_at_turn(state, "MLA", 4) == (
        "## Lessons\n- Retrain every two weeks\n- 400 A100 GPU-hours",
        1,
    )
    seen = in_view_at_last_turn(task, state)
    assert seen["agents"]["DEA"]["share"] is None
    assert seen["mean"] == pytest.approx(2 / 9)  # over the agents it can tell


@pytest.mark.parametrize("memory", ["intrinsic", "none"])
def test_a_scripted_run_reports_it_in_run_json_and_ima_show(cli, task, memory):
    thread = f"v-{memory}"
    args = ["run", "--model", "scripted", "--thread", thread, "--memory", memory]
    assert cli(*args, "--no-long-term")[0] == 0
    recorded = json.loads(Path(f"runs/{thread}/run.json").read_text())["in_view_last_turn"]
    with RunRegistry("runs/ima.sqlite") as registry:
        values = load_state(registry.find(thread), "runs/ima.sqlite")
    assert recorded == in_view_at_last_turn(task, values)  # from the stored state alone
    assert recorded["memory"] is (memory == "intrinsic")
    assert list(recorded["agents"]) == task.speakers
    for role, agent in recorded["agents"].items():
        assert agent["items"] == len(task.own_items(role))
        assert agent["share"] == len(agent["held"]) / agent["items"]
        assert (agent["memory_version"] is not None) is (memory == "intrinsic")
    assert 0 < recorded["mean"] < 1

    shown = json.loads(cli("show", thread, "--json")[1])
    assert shown["in_view_last_turn"] == recorded
    assert shown["content"]["in_view_last_turn_pct"] == round(100 * recorded["mean"], 1)
    own = shown["memory"]["retention"]
    if memory == "intrinsic":
        assert len(own["agents"]["DEA"]["own_items"]) == 23
        assert all("own_retention" in v for v in own["agents"]["DEA"]["versions"])
        assert own["own_end"] is not None
    else:
        assert own["own_end"] is None and own["agents"] == {}
    code, out, _ = cli("show", thread)
    assert code == 0 and "In view at the last turn" in out
    assert ("own end" in out) is (memory == "intrinsic")  # the memory table's own columns


def test_the_eval_report_compares_it_with_the_same_statistics():
    def row(system: str, seed: int, in_view: float, own: float | None) -> dict[str, Any]:
        memory = None if own is None else {"own_retention_end": own, "retention_end": own / 2}
        return {
            "key": f"{system}/{seed}",
            "thread_id": f"t-{system}-{seed}",
            "condition": {
                "memory_mode": "intrinsic" if system == "intrinsic" else "none",
                "template": "generic" if system == "intrinsic" else None,
                "token_budget": 2048,
                "seed": seed,
            },
            "status": "finalized",
            "turns": 10,
            "wall_seconds": 1.0,
            "content": {"in_view": {"mean": in_view}, "memory": memory},
            "judge": {"status": "failed", "scores": {}, "attempts": 1, "error": "x"},
        }

    cell = Cell("generic", 2048)
    cell.baseline = [row("baseline", s, v, None) for s, v in enumerate([0.1, 0.2, 0.3])]
    cell.intrinsic = [row("intrinsic", s, v, v) for s, v in enumerate([0.4, 0.5, 0.6])]
    rows = {c.metric.name: c for c in cell.compare()}
    seen = rows["in_view_last_turn"]
    assert (seen.baseline.mean, seen.intrinsic.mean) == pytest.approx((20.0, 50.0))
    assert seen.p == pytest.approx(0.0495, abs=1e-4)  # complete separation, 3 + 3
    own = rows["memory_own_retention_end"]
    assert own.baseline.n == 0 and own.intrinsic.mean == pytest.approx(50.0)
    report = markdown_report(cell.baseline + cell.intrinsic, None, {})
    assert "| Own items in view at the last turn (%) | 20.0 | 20.0 | 10.0 | 50.0 |" in report
    assert "| Memory retention of own items at the end (%) |" in report
