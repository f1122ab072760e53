"""Judge calibration: the bundled calibration set is valid and consistent, the accuracy
arithmetic matches hand-computed values, and `ima eval calibrate` works end to end."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from ima.core.errors import UserError
from ima.evals import calibration
from ima.evals.calibration import (
    MEAN,
    PASS_ACCURACY,
    REFERENCE,
    analyse,
    calibrate,
    find_calibration,
    load_set,
    usable,
    write_calibration,
)
from ima.evals.judge import METRICS
from ima.measures.content import figure_grounding
from ima.tasks import Task

# ----------------------------------------------------------------------------- the data


@pytest.fixture(scope="module")
def cal() -> calibration.CalibrationSet:
    return load_set("data-pipeline")


def test_the_set_has_a_reference_and_every_kind_of_break(cal):
    assert {v.id for v in cal.variants} == {
        "no-blurring",
        "over-budget",
        "no-costs",
        "no-figures",
        "spec-contradicts",
        "no-safety-path",
        "boilerplate",
    }
    for design in cal.designs:
        assert isinstance(design.spec, dict)
        for heading in ("## Summary", "## High-level plan", "## Resource estimates"):
            assert heading in design.markdown, (design.id, heading)
    for variant in cal.variants:
        assert variant.breaks and variant.lowers
        assert set(variant.lowers) <= {*METRICS, MEAN}
    # every file in the folder is named by the index (no stale or forgotten designs)
    named = {"index.yaml"} | {
        f for d in yaml.safe_load((cal.directory / "index.yaml").read_text())["variants"]
        for f in (d["design"], d["spec"])
    } | {"reference.md", "reference.json"}  # fmt: skip
    assert {p.name for p in cal.directory.iterdir()} == named


def _money(cell: str) -> int | None:
    match = re.fullmatch(r"\**([\d,]+)\**", cell.strip())
    return int(match.group(1).replace(",", "")) if match else None


def cost_table(markdown: str) -> tuple[list[tuple[str, int]], list[int], int]:
    """(item rows, group subtotals, total) of a design's cost table; the total is the
    last bold row; a bold row after items closes their group."""
    items: list[tuple[str, int]] = []
    groups: list[int] = []
    pending: list[int] = []
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or _money(cells[2]) is None:
            continue
        value = _money(cells[2])
        assert value is not None
        if cells[0].startswith("**"):
            assert not pending or sum(pending) == value, (cells[0], pending, value)
            groups.append(value)
            pending = []
        else:
            items.append((cells[0], value))
            pending.append(value)
    total = groups.pop()
    return items, groups, total


@pytest.mark.parametrize("design_id", ["reference", "over-budget", "no-safety-path"])
def test_the_cost_tables_add_up_and_match_the_spec(cal, design_id):
    design = next(d for d in cal.designs if d.id == design_id)
    _, groups, total = cost_table(design.markdown)
    assert sum(groups) == total
    assert design.spec["estimated_monthly_cost_usd"] == total
    assert f"USD {total:,}" in design.markdown  # the summary states the same total
    assert (total <= 45000) is (design_id != "over-budget")


def test_the_reference_states_every_key_figure_and_nothing_the_brief_contradicts(cal):
    g = figure_grounding(cal.task, cal.reference.markdown, cal.reference.spec)
    assert g["design"] == 1.0 and g["conflicts"] == []
    contradicted = next(v for v in cal.variants if v.id == "spec-contradicts")
    assert contradicted.markdown == cal.reference.markdown  # the JSON contradicts it
    assert contradicted.spec != cal.reference.spec
    vague = next(v for v in cal.variants if v.id == "no-figures")
    assert figure_grounding(cal.task, vague.markdown, None)["design"] == 0.0


def test_boilerplate_is_about_as_long_as_the_reference(cal):
    boiler = next(v for v in cal.variants if v.id == "boilerplate")
    assert 0.9 <= len(boiler.markdown) / len(cal.reference.markdown) <= 1.1
    assert figure_grounding(cal.task, boiler.markdown, None)["design"] == 0.0


def test_a_broken_set_is_refused_with_the_reason(tmp_path, cal):
    target = tmp_path / "set"
    target.mkdir()
    for path in cal.directory.iterdir():
        (target / path.name).write_bytes(path.read_bytes())
    (target / "reference.json").write_text('{"storage": ')
    with pytest.raises(UserError, match=r"reference\.json: not valid JSON"):
        load_set("data-pipeline", target)
    (target / "reference.json").write_bytes((cal.directory / "reference.json").read_bytes())
    index = (target / "index.yaml").read_text().replace("task_version: 3", "task_version: 1")
    (target / "index.yaml").write_text(index)
    with pytest.raises(UserError, match="written for data-pipeline v1"):
        load_set("data-pipeline", target)
    with pytest.raises(UserError, match="has no calibration set"):
        load_set("data-pipeline", tmp_path)


# ----------------------------------------------------------------------------- arithmetic


def s(*five: float) -> dict[str, float]:
    return usable({"status": "ok", "scores": dict(zip(METRICS, five, strict=True))})  # type: ignore[return-value]


def test_accuracy_spread_and_agreement_match_hand_computed_values():
    scores = {
        REFERENCE: [s(8, 8, 8, 8, 8), s(8, 8, 8, 8, 8)],
        "cheap": [s(8, 8, 8, 3, 8), s(8, 8, 8, 8, 8)],  # breaks cost: win, then tie
        "vague": [None, s(9, 9, 9, 9, 9)],  # one failed verdict, then a loss on the mean
    }
    result = analyse(scores, {"cheap": ("cost_effectiveness",), "vague": (MEAN,)})
    cheap, vague = result["variants"]
    assert cheap["targeted"] == {"accuracy": 0.75, "wins": 1, "ties": 1, "losses": 0, "n": 2}
    assert cheap["overall"]["accuracy"] == 0.75  # means 8 vs 7, then 8 vs 8
    assert vague["targeted"] == {"accuracy": 0.0, "wins": 0, "ties": 0, "losses": 1, "n": 1}
    # all comparisons: 1 win, 1 tie, 1 loss -> (1 + 0.5) / 3
    assert result["accuracy"]["targeted"]["accuracy"] == 0.5
    assert result["accuracy"]["overall"]["accuracy"] == 0.5
    assert cheap["mean"] == 7.5 and cheap["delta"] == 0.5 and vague["delta"] == -1.0
    # design means 8, 7.5, 9: sample sd sqrt(((1/6)^2 + (2/3)^2 + (5/6)^2) / 2)
    assert result["spread"]["sd_of_design_means"] == pytest.approx((7 / 12) ** 0.5)
    # 10 cells with two usable repeats (vague has one): 9 identical; |3 - 8| once
    assert result["agreement"] == {"cells": 10, "exact": 0.9, "mean_abs_diff": 0.5}
    assert result["failed_verdicts"] == 1 and result["verdicts"] == 6
    assert result["verdict"]["discriminates"] is False
    assert "CANNOT DISCRIMINATE" in result["verdict"]["line"]


def test_the_verdict_threshold():
    ref = [s(9, 9, 9, 9, 9)] * 4
    good = {REFERENCE: ref, "bad": [s(4, 4, 4, 4, 4)] * 3 + [s(9, 9, 9, 9, 9)]}
    result = analyse(good, {"bad": ("reliability",)})  # 3 wins, 1 tie: 87.5%
    assert result["accuracy"]["targeted"]["accuracy"] == 0.875 >= PASS_ACCURACY
    assert result["verdict"]["discriminates"] is True
    edge = {REFERENCE: ref, "bad": [s(4, 4, 4, 4, 4)] * 2 + [s(9, 9, 9, 9, 9)] * 2}
    result = analyse(edge, {"bad": ("reliability",)})  # 2 wins, 2 ties: exactly 75%
    assert result["accuracy"]["overall"]["accuracy"] == PASS_ACCURACY
    assert result["verdict"]["discriminates"] is True  # the threshold is inclusive
    coin = {REFERENCE: ref, "bad": [s(4, 4, 4, 4, 4)] * 2 + [s(10, 10, 10, 10, 10)] * 2}
    assert analyse(coin, {"bad": ("reliability",)})["verdict"]["discriminates"] is False
    failed = {REFERENCE: [None], "bad": [s(4, 4, 4, 4, 4)]}
    assert analyse(failed, {"bad": ("reliability",)})["verdict"]["discriminates"] is None


# ----------------------------------------------------------------------------- with a judge


class FakeJudge(BaseChatModel):
    """Scores by rule: `reference_score` for the reference design and spec, else `other`."""

    reference_md: str
    reference_spec: str
    reference_score: int = 9
    other: int = 4

    @property
    def _llm_type(self) -> str:
        return "fake-judge"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        prompt = str(messages[-1].content)
        is_reference = self.reference_md in prompt and self.reference_spec in prompt
        score = self.reference_score if is_reference else self.other
        answer = {m: {"rationale": f"a reason about {m}", "score": score} for m in METRICS}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(json.dumps(answer)))])


def _fake(cal: calibration.CalibrationSet, **kw: Any) -> FakeJudge:
    return FakeJudge(
        reference_md=cal.reference.markdown.strip(),
        reference_spec=json.dumps(cal.reference.spec, indent=2),
        **kw,
    )


def test_a_judge_that_tells_the_reference_apart_passes(cal, tmp_path):
    judge = _fake(cal)
    entry = calibrate(cal, lambda r: judge, judge_model="fake", repeats=2)
    a = entry["analysis"]
    n_targeted = 2 * sum(len(v.lowers) for v in cal.variants)
    assert a["accuracy"]["targeted"] == {
        "accuracy": 1.0, "wins": n_targeted, "ties": 0, "losses": 0, "n": n_targeted,
    }  # fmt: skip
    assert a["accuracy"]["overall"]["n"] == 2 * len(cal.variants)
    assert a["verdict"]["discriminates"] is True
    assert a["agreement"]["exact"] == 1.0
    assert entry["warned_verdicts"] == 0  # its rationales do not restate the criteria
    assert a["designs"][REFERENCE]["mean"] == 9 and a["designs"]["boilerplate"]["mean"] == 4
    assert set(entry["verdicts"]) == {d.id for d in cal.designs}
    assert all(len(v) == 2 for v in entry["verdicts"].values())


def test_a_judge_that_scores_everything_alike_cannot_discriminate(cal, tmp_path):
    judge = _fake(cal, reference_score=7, other=7)
    entry = calibrate(cal, lambda r: judge, judge_model="flat", repeats=1)
    a = entry["analysis"]
    assert a["accuracy"]["targeted"]["accuracy"] == 0.5  # all ties
    assert a["spread"]["sd_of_design_means"] == 0
    assert a["verdict"]["discriminates"] is False
    assert a["agreement"]["cells"] == 0  # one repeat: nothing to agree on


def test_model_errors_are_failed_verdicts_not_crashes(cal):
    class Broken(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "broken"

        def _generate(self, *args: Any, **kw: Any) -> ChatResult:
            raise ValueError("Requested tokens exceed context window")

    entry = calibrate(cal, lambda r: Broken(), judge_model="broken", repeats=1)
    assert entry["analysis"]["failed_verdicts"] == len(cal.designs)
    assert "exceed context window" in entry["verdicts"][REFERENCE][0]["error"]
    assert entry["analysis"]["verdict"]["discriminates"] is None


def test_calibration_files_keep_one_entry_per_judge(cal, tmp_path):
    good = calibrate(cal, lambda r: _fake(cal), judge_model="good", repeats=1)
    flat = calibrate(cal, lambda r: _fake(cal, other=9), judge_model="flat", repeats=1)
    write_calibration(tmp_path, good)
    json_path, md_path = write_calibration(tmp_path, flat)
    assert set(json.loads(json_path.read_text())["judges"]) == {"good", "flat"}
    md = md_path.read_text()
    assert "## Judge calibration: good" in md and "## Judge calibration: flat" in md
    found, note = find_calibration(tmp_path, "good")
    assert found is not None and found["judge"]["model"] == "good" and note == ""
    missing, note = find_calibration(tmp_path, "other")
    assert missing is None and "calibrates flat, good, not this judge (other)" in note
    with pytest.raises(UserError, match="not found"):
        find_calibration(tmp_path, "good", tmp_path / "nope.json")


# ----------------------------------------------------------------------------- the command


def test_calibrate_command_with_the_scripted_judge(cli, tmp_path):
    out = tmp_path / "cal"
    code, stdout, stderr = cli(
        "eval", "calibrate", "--judge-model", "scripted", "--repeats", "2", "--out", str(out)
    )
    assert code == 0, stderr
    assert "verdict:" in stdout
    entry = json.loads((out / "calibration.json").read_text())["judges"]["scripted"]
    assert entry["repeats"] == 2 and entry["judge"]["temperature"] == 0.0
    assert len(entry["verdicts"]) == 8 and all(len(v) == 2 for v in entry["verdicts"].values())
    # the stored analysis is the arithmetic of the stored scores (scripted scores vary)
    scores = {d: [usable(v) for v in vs] for d, vs in entry["verdicts"].items()}
    lowers = {v["id"]: tuple(v["lowers"]) for v in entry["analysis"]["variants"]}
    assert analyse(scores, lowers) == entry["analysis"]
    assert entry["analysis"]["verdict"]["line"] in (out / "calibration.md").read_text()


def test_options_before_the_subcommand_are_refused(cli):
    code, _, stderr = cli("eval", "--judge-model", "scripted", "calibrate")
    assert code == 2 and "--judge-model given before `calibrate`" in stderr
    code, _, stderr = cli("eval", "calibrate", "--repeats", "0")
    assert code == 2 and "--repeats must be at least 1" in stderr


def test_the_eval_report_shows_the_judges_calibration_and_content_metrics(cli, tmp_path):
    out = tmp_path / "ev"
    code, _, stderr = cli(
        "eval", "--model", "scripted", "--pairs", "1", "--turn-cap", "6", "--out", str(out)
    )
    assert code == 0, stderr
    report = (out / "report.md").read_text()
    assert "Parroting, turns (%)" in report and "Brief figures stated, design (%)" in report
    assert "is not calibrated: run `ima eval calibrate --judge-model scripted" in report

    code, _, stderr = cli(
        "eval", "calibrate", "--judge-model", "scripted", "--repeats", "1", "--out", str(out)
    )
    assert code == 0, stderr
    # runs stored before content metrics existed get them from their checkpoints
    results = out / "results.jsonl"
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    stored = {r["key"]: r["content"] for r in rows}
    results.write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k != "content"}) + "\n" for r in rows)
    )
    code, stdout, stderr = cli("eval", "--report-only", str(out))
    assert code == 0, stderr
    report = (out / "report.md").read_text()
    assert "## Judge calibration: scripted" in report
    assert "Judge calibration (scripted):" in report  # beside the verdicts
    assert "Judge calibration (scripted):" in stdout

    from ima.evals.content_runs import fill_content

    config = json.loads((out / "config.json").read_text())
    refilled = fill_content(
        out, [json.loads(line) for line in results.read_text().splitlines()], config["task"]["ref"]
    )
    assert {r["key"]: r["content"] for r in refilled} == stored
    assert all(c["parroting"]["turns_scored"] > 0 for c in stored.values())


def test_a_task_outside_the_package_looks_beside_its_file(tmp_path, task: Task):
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(task.model_dump()))
    assert calibration.set_directory(str(path)) == tmp_path / "calibration" / task.id
    with pytest.raises(UserError, match="has no calibration set"):
        load_set(str(path))
