"""The evaluation's parts: statistics against hand-computed values, the judge's parsing and
retries, structured output through tool calling, and the requirement-coverage check."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from ima.evals.comparison import Cell
from ima.evals.coverage import design_text, evidence_coverage, llm_coverage, parse_check
from ima.evals.judge import METRICS, judge_design, parse_verdict
from ima.evals.report import markdown_report
from ima.evals.stats import ranksum_p, summarize
from ima.models.scripted import ScriptedChatModel
from ima.models.structured import AnswerError

# ----------------------------------------------------------------------------- statistics


def test_summary_matches_hand_computed_values():
    s = summarize([2, 4, 4, 4, 5, 5, 7, 9])
    assert s.n == 8 and s.mean == 5.0 and s.median == 4.5
    # sample sd: squared deviations 9+1+1+1+0+0+4+16 = 32, over n-1 = 7
    assert s.std == pytest.approx(math.sqrt(32 / 7))
    assert (s.minimum, s.maximum) == (2, 9)
    assert summarize([3]).std is None and summarize([3]).median == 3
    assert summarize([]).mean is None


def _normal_two_sided(z: float) -> float:
    return math.erfc(abs(z) / math.sqrt(2))


def test_ranksum_p_matches_hand_computation():
    # x = [1, 3, 5], y = [2, 4, 6, 8]: ranks of x in the pooled sample are 1, 3, 5, so W = 9;
    # E[W] = n1 (n1 + n2 + 1) / 2 = 12; Var[W] = n1 n2 (n1 + n2 + 1) / 12 = 8;
    # z = (9 - 12) / sqrt(8) = -1.0607, p = 2 (1 - Phi(1.0607)) = 0.2888
    z = (9 - 12) / math.sqrt(8)
    assert ranksum_p([1, 3, 5], [2, 4, 6, 8]) == pytest.approx(_normal_two_sided(z))
    assert ranksum_p([1, 3, 5], [2, 4, 6, 8]) == pytest.approx(0.2888, abs=1e-4)
    # complete separation with 3 + 3: W = 6, E = 10.5, Var = 5.25, p = 0.0495
    assert ranksum_p([1, 2, 3], [4, 5, 6]) == pytest.approx(
        _normal_two_sided(-4.5 / math.sqrt(5.25))
    )
    assert ranksum_p([1, 2, 3], [4, 5, 6]) == pytest.approx(0.0495, abs=1e-4)
    assert ranksum_p([], [1, 2]) is None


def _row(system: str, seed: int, tokens: int, scores: list[int] | None, covered: int) -> dict:
    verdict: dict[str, Any] = (
        {"status": "ok", "scores": dict(zip(METRICS, scores, strict=True)), "attempts": 1,
         "rationales": dict.fromkeys(METRICS, "because")}
        if scores
        else {"status": "failed", "scores": {}, "attempts": 3, "error": "not parseable JSON"}
    )  # fmt: skip
    return {
        "key": f"{system}/{seed}",
        "thread_id": f"t-{system}-{seed}",
        "condition": {
            "memory_mode": "intrinsic" if system == "intrinsic" else "none",
            "template": "generic" if system == "intrinsic" else None,
            "token_budget": 2048,
            "seed": seed,
        },
        "settings": {"model": "scripted", "turn_cap": 10},
        "status": "finalized",
        "turns": 10 + seed,
        "wall_seconds": 1.0,
        "usage": {
            "total": {"input_tokens": tokens - 100, "output_tokens": 100},
            "by_kind": {"agent_turn": {"input_tokens": tokens - 100, "output_tokens": 100}},
        },
        "coverage": {
            "score": covered / 4,
            "covered": [f"R{i}" for i in range(covered)],
            "checked": 4,
            "details": {f"R{i}": {"covered": i < covered} for i in range(4)},
        },
        "judge": verdict,
    }


def test_comparison_statistics_from_stored_rows():
    cell = Cell("generic", 2048)
    cell.baseline = [
        _row("baseline", 0, 1000, [1, 2, 3, 4, 5], 1),
        _row("baseline", 1, 2000, [3, 2, 3, 4, 5], 2),
        _row("baseline", 2, 3000, None, 3),  # failed verdict: counted, not scored
    ]
    cell.intrinsic = [
        _row("intrinsic", 0, 4000, [5, 6, 7, 8, 9], 4),
        _row("intrinsic", 1, 5000, [7, 6, 7, 8, 9], 3),
        _row("intrinsic", 2, 6000, [9, 6, 7, 8, 9], 4),
    ]
    rows = {c.metric.name: c for c in cell.compare()}
    assert rows["tokens"].baseline.mean == 2000 and rows["tokens"].intrinsic.mean == 5000
    assert rows["tokens"].p == pytest.approx(0.0495, abs=1e-4)  # complete separation, 3 + 3
    assert cell.token_ratio() == pytest.approx(2.5)
    assert rows["scalability"].baseline.n == 2  # the failed verdict is left out
    assert rows["scalability"].baseline.mean == 2 and rows["scalability"].intrinsic.median == 7
    assert rows["scalability"].intrinsic.std == 2.0
    # x = [1, 3], y = [5, 7, 9]: W = 3, E = 6, Var = 3, z = -sqrt(3)
    assert rows["scalability"].p == pytest.approx(_normal_two_sided(-math.sqrt(3)))
    assert rows["coverage"].baseline.mean == 50 and rows[
        "coverage"
    ].intrinsic.mean == pytest.approx(100 * 11 / 12)
    assert rows["judge_mean"].baseline.mean == pytest.approx((3 + 3.4) / 2)

    report = markdown_report(cell.baseline + cell.intrinsic, None, {})
    assert "**Token ratio intrinsic/baseline: 2.50 (+150%)**" in report
    assert (
        "| Tokens (total) | 2,000 | 2,000 | 1,000 | 5,000 | 5,000 | 1,000 | 3/3 | 0.0495 |"
        in report
    )
    assert "baseline 1, intrinsic 0" in report  # failed verdicts are counted
    assert "- `t-baseline-2`: 3 attempts; not parseable JSON" in report


# ----------------------------------------------------------------------------- judge


def verdict_json(**overrides: Any) -> dict:
    data = {m: {"rationale": f"{m} is fine.", "score": 6} for m in METRICS}
    data.update(overrides)
    return data


def test_parse_verdict_tolerates_fences_prose_spellings_and_score_strings():
    text = (
        "Here is my verdict:\n```json\n"
        + json.dumps(
            {
                "Scalability": {"rationale": "Sized.", "score": "7/10"},
                "Reliability": {"reason": "Replicated.", "score": 5.0},
                "usability": {"rationale": "Clear.", "rating": "4"},
                "Cost-effectiveness": {"rationale": "Under budget.", "score": 8},
                "documentation": {"justification": "Complete.", "score": 9},
            }
        )
        + "\n```\nThanks."
    )
    v = parse_verdict(text)
    assert [getattr(v, m).score for m in METRICS] == [7, 5, 4, 8, 9]
    assert v.reliability.rationale == "Replicated."
    nested = parse_verdict(json.dumps({"scores": verdict_json()}))
    assert nested.documentation.score == 6


@pytest.mark.parametrize(
    "text, problem",
    [
        ("I like it, 8/10.", "no JSON object"),
        ('{"scalability": {"rationale": "x", "score": 7}', "not parseable"),
        (json.dumps(verdict_json(usability={"rationale": "x", "score": 11})), "outside 1 to 10"),
        (json.dumps(verdict_json(usability={"rationale": "x", "score": "good"})), "not an integer"),
        (json.dumps(verdict_json(usability={"score": 5})), "usability has no rationale"),
        (json.dumps({m: v for m, v in verdict_json().items() if m != "documentation"}), "missing"),
        ("[1, 2, 3]", "not an object"),
    ],
)
def test_parse_verdict_rejects_what_cannot_be_scored(text, problem):
    with pytest.raises(AnswerError, match=problem):
        parse_verdict(text)


class RecordingScripted(ScriptedChatModel):
    """The scripted model, remembering every prompt it was sent."""

    seen: list[list[str]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs):
        self.seen.append([str(m.content) for m in messages])
        return super()._generate(messages, stop, run_manager, **kwargs)


DESIGN = dict(brief="Design a pipeline.", design="## Summary\nA design.", specification={"a": 1})


def test_unparseable_verdict_is_retried_with_the_problem_then_recorded_failed():
    model = RecordingScripted(bad_judge=10)
    verdict = judge_design(model, subject="t1", **DESIGN)
    assert verdict["status"] == "failed" and verdict["attempts"] == 3
    assert verdict["scores"] == {} and "no JSON object" in verdict["error"]
    assert verdict["usage"]["calls"] == 3
    assert len(verdict["answers"]) == 3
    assert len(model.seen) == 3
    retry = model.seen[1]
    assert len(retry) == 3 and "could not be used: no JSON object found" in retry[2]


def canned(*answers: str) -> FakeMessagesListChatModel:
    """A chat model that answers `answers` in turn, with the backend's token counts."""
    usage = {"input_tokens": 900, "output_tokens": 120, "total_tokens": 1020}
    return FakeMessagesListChatModel(
        responses=[AIMessage(a, usage_metadata=usage) for a in answers]
    )


def test_verdict_that_parses_on_a_retry_is_used():
    scores = dict(zip(METRICS, [7, 5, 4, 8, 9], strict=True))
    usable = {m: {"rationale": f"{m} checked.", "score": s} for m, s in scores.items()}
    model = canned("I like it, 8/10.", '{"scalability": {', json.dumps(usable))
    verdict = judge_design(model, subject="t1", **DESIGN)
    assert verdict["status"] == "ok" and verdict["attempts"] == 3
    assert verdict["scores"] == scores  # the scores of the usable answer, nothing else
    assert verdict["rationales"]["usability"] == "usability checked."
    assert verdict["answers"] == [] and verdict["error"] == ""
    usage = verdict["usage"]
    assert (usage["calls"], usage["input_tokens"], usage["estimated_calls"]) == (3, 2700, 0)


def test_a_missing_design_is_a_failed_verdict_without_a_model_call():
    verdict = judge_design(
        ScriptedChatModel(), subject="t", brief="b", design="  ", specification=None
    )
    assert verdict["status"] == "failed" and verdict["attempts"] == 0


class ToolCallingModel(BaseChatModel):
    """A chat model with tool calling: `with_structured_output` goes through bind_tools."""

    args: dict = Field(default_factory=dict)

    @property
    def _llm_type(self) -> str:
        return "tool-calling-fake"

    def bind_tools(self, tools, **kwargs):
        return self.bind(tools=tools, **kwargs)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        assert kwargs.get("tools"), "structured output must arrive through a tool"
        message = AIMessage(
            content="",
            tool_calls=[{"name": "JudgeVerdict", "args": self.args, "id": "call-1"}],
            usage_metadata={"input_tokens": 1234, "output_tokens": 56, "total_tokens": 1290},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def test_tool_calling_models_answer_through_with_structured_output():
    model = ToolCallingModel(
        args=verdict_json(reliability={"rationale": "Two regions.", "score": 8})
    )
    verdict = judge_design(model, subject="t", **DESIGN)
    assert verdict["status"] == "ok" and verdict["scores"]["reliability"] == 8
    usage = verdict["usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["estimated_calls"]) == (
        1234,
        56,
        0,
    )


# ----------------------------------------------------------------------------- coverage


def test_evidence_coverage_checks_each_requirement(task):
    markdown = (
        "## Summary\nVehicles offload over depot Wi-Fi each night; safety events go over LTE "
        "and reach the safety dashboard in under 5 minutes via a streaming path.\n"
        "Faces and licence plates are blurred on ingest.\n"
    )
    spec = {
        "storage": {"raw_store": "S3 eu-central-1", "retention_days": 30},
        "compliance": ["Blurred training data kept 3 years", "Safety-event records kept 5 years"],
        "processing": {"streaming": "Kinesis", "batch": "EMR"},
    }
    result = evidence_coverage(task, markdown, spec)
    assert set(result["covered"]) == {"R1", "R2", "R6", "R7"}
    assert result["checked"] == 12 and result["score"] == pytest.approx(4 / 12)
    r1 = result["details"]["R1"]
    assert r1["matched"] == ["wi-fi", "lte"]
    assert result["details"]["R7"]["matched"][0] == "retention days: 30"
    # R5 is half there: blurring, faces and plates, but no logged access to unblurred data
    r5 = result["details"]["R5"]
    assert not r5["covered"] and r5["matched"][:3] == ["blur", "face", "plate"]
    assert r5["missing"][0].startswith("audit | access log | logged | logging of access")
    # R4 needs the cellular cap, not just the cellular path
    assert result["details"]["R4"]["matched"] == ["lte", None]


def test_schema_key_names_are_not_evidence(task):
    """design.json's keys (storage, streaming, ...) come from the schema: they prove nothing."""
    spec = {"storage": {"raw_store": "x"}, "processing": {"streaming": "y"}}
    text = design_text("", spec)
    assert "storage" not in text and "streaming" not in text
    assert evidence_coverage(task, "", spec)["covered"] == []


def test_keywords_match_at_word_starts_with_flexible_separators(task):
    text = (
        "Onboard data is deleted only after a SHA-256 verified transfer; thirty-day raw retention."
    )
    result = evidence_coverage(task, text, None)
    assert result["details"]["R11"]["matched"][1] == "sha 256"
    assert result["details"]["R7"]["matched"][0] == "thirty day"
    assert evidence_coverage(task, "shared storage, backpacks", None)["details"]["R11"]["matched"][
        :2
    ] == [
        None,
        None,
    ]  # "sha" inside "shared" and "ack" inside "backpacks" do not count


def test_llm_coverage_asks_once_per_requirement(task):
    ids = [r.id for r in task.requirements]
    said_yes = set(ids[::3])  # the model addresses every third requirement
    answers = [
        json.dumps({"evidence": "named in the plan" if rid in said_yes else "none",
                    "addressed": rid in said_yes})
        for rid in ids
    ]  # fmt: skip
    result = llm_coverage(canned(*answers), task, "## Summary\nA design.", {"a": 1}, "t1")
    assert list(result["details"]) == ids
    assert result["usage"]["calls"] == len(ids)
    assert set(result["covered"]) == said_yes
    assert result["score"] == pytest.approx(len(said_yes) / len(ids))


@pytest.mark.parametrize(
    "text, addressed",
    [
        ('{"evidence": "S3 in eu-central-1", "addressed": true}', True),
        ('```json\n{"evidence": "none", "addressed": "no"}\n```', False),
        ("Yes, the design names EU regions.", True),
        ("No.", False),
        ("Not addressed.", False),
    ],
)
def test_parse_check(text, addressed):
    assert parse_check(text).addressed is addressed


def test_parse_check_rejects_an_answer_without_a_decision():
    with pytest.raises(AnswerError):
        parse_check('{"evidence": "something"}')
    with pytest.raises(AnswerError):
        parse_check("Maybe.")


def test_degenerate_verdicts_are_flagged_but_still_scored():
    from ima import prompts
    from ima.evals.judge import verdict_warnings

    prompt = prompts.load("judge")
    parroted = {m: f"{m}: the definition" for m in METRICS}
    parroted["reliability"] = "Fault tolerance, no data loss, availability targets, recovery."
    assert verdict_warnings(parroted, prompt) == [
        "rationales restate the criterion definitions (reliability)"
    ]
    same = dict.fromkeys(METRICS, "The pipeline is designed to handle the requirements.")
    assert verdict_warnings(same, prompt) == ["rationales repeat each other"]
    real = {
        "scalability": "Kinesis shards sized for 12 TB/day.",
        "reliability": "Clips kept until acknowledged; two regions.",
        "usability": "Managed services suit 6 engineers.",
        "cost_effectiveness": "USD 41,000 of 45,000, broken down.",
        "documentation": "The JSON matches the plan.",
    }
    assert verdict_warnings(real, prompt) == []
    # judge_design scores such a verdict and records the warning beside it
    answer = {m: {"rationale": same[m], "score": 6} for m in METRICS}
    verdict = judge_design(canned(json.dumps(answer)), subject="t1", **DESIGN)
    assert verdict["status"] == "ok" and verdict["scores"] == dict.fromkeys(METRICS, 6)
    assert verdict["warnings"] == ["rationales repeat each other"]
    real_answer = {m: {"rationale": real[m], "score": 6} for m in METRICS}
    assert judge_design(canned(json.dumps(real_answer)), subject="t1", **DESIGN)["warnings"] == []


def test_cached_input_is_compared_when_the_backend_reports_it():
    from ima.evals.metrics import metrics_for

    def row(cached: int) -> dict:
        total = {"input_tokens": 1000, "output_tokens": 50, "cached_tokens": cached}
        return {"usage": {"total": total, "by_kind": {}}, "turns": 3, "wall_seconds": 1.0}

    names = {m.name: m for m in metrics_for([row(600), row(0)])}
    assert names["input_evaluated"].get(row(600)) == 400
    assert names["input_cached"].get(row(600)) == 600
    assert "input_cached" not in {m.name for m in metrics_for([row(0)])}  # nothing reported
