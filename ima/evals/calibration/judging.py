"""Judging a calibration set: every design's verdicts, one per repeat, and one judge's
calibration entry (verdicts, their analysis, what it cost)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langchain_core.language_models import BaseChatModel

from ima.core.errors import UserError
from ima.evals.calibration.analysis import analyse, usable
from ima.evals.calibration.sets import CalibrationSet
from ima.evals.judge import MAX_ATTEMPTS, Verdict, failed_verdict, judge_design


@dataclass
class JudgeEvent:
    design: str
    repeat: int  # 0-based
    verdict: Verdict | None = None  # None: about to be judged


def judge_set(
    cal: CalibrationSet,
    judge_for: Callable[[int], BaseChatModel],
    repeats: int,
    attempts: int = MAX_ATTEMPTS,
    notify: Callable[[JudgeEvent], None] = lambda p: None,
) -> dict[str, list[Verdict]]:
    """Every design's verdicts, one per repeat (`judge_for(r)` gives repeat r's model).
    A model error is recorded as a failed verdict, and the next design goes on."""
    verdicts: dict[str, list[Verdict]] = {d.id: [] for d in cal.designs}
    for repeat in range(repeats):
        model = judge_for(repeat)
        for design in cal.designs:
            notify(JudgeEvent(design.id, repeat))
            started = time.perf_counter()
            try:
                verdict = judge_design(
                    model,
                    brief=cal.task.description,
                    design=design.markdown,
                    specification=design.spec,
                    subject=f"calibration/{design.id}/r{repeat}",
                    max_attempts=attempts,
                )
            except Exception as exc:  # a model failure is not a verdict, but it is a result
                verdict = failed_verdict(f"model error: {type(exc).__name__}: {exc}"[:500])
            verdict["seconds"] = round(time.perf_counter() - started, 3)
            verdicts[design.id].append(verdict)
            notify(JudgeEvent(design.id, repeat, verdict))
    return verdicts


def calibrate(
    cal: CalibrationSet,
    judge_for: Callable[[int], BaseChatModel],
    *,
    judge_model: str,
    judge_seed: int = 0,
    repeats: int = 3,
    attempts: int = MAX_ATTEMPTS,
    notify: Callable[[JudgeEvent], None] = lambda p: None,
) -> dict[str, Any]:
    """Score the set and analyse it: one judge's calibration entry (JSON-ready)."""
    if repeats < 1:
        raise UserError("--repeats must be at least 1")
    started = time.perf_counter()
    verdicts = judge_set(cal, judge_for, repeats, attempts, notify)
    scores = {d: [usable(v) for v in vs] for d, vs in verdicts.items()}
    lowers = {v.id: v.lowers for v in cal.variants}
    tokens = sum(
        (v.get("usage") or {}).get("input_tokens", 0)
        + (v.get("usage") or {}).get("output_tokens", 0)
        for vs in verdicts.values()
        for v in vs
    )
    return {
        "judge": {
            "model": judge_model,
            "seed": judge_seed,
            "temperature": 0.0,
            "attempts": attempts,
        },
        "task": {
            "id": cal.task.id,
            "version": cal.task.version,
            "fingerprint": cal.task.fingerprint,
        },
        "set": {"directory": str(cal.directory), "fingerprint": cal.fingerprint},
        "repeats": repeats,
        "breaks": {v.id: v.breaks for v in cal.variants},
        "analysis": analyse(scores, lowers),
        "verdicts": {
            d: [
                {
                    k: v.get(k)
                    for k in (
                        "status",
                        "scores",
                        "rationales",
                        "warnings",
                        "attempts",
                        "error",
                        "seconds",
                    )
                }
                for v in vs
            ]
            for d, vs in verdicts.items()
        },
        # scored, but the rationales restate the criteria or repeat each other (judge.py)
        "warned_verdicts": sum(bool(v.get("warnings")) for vs in verdicts.values() for v in vs),
        "tokens": tokens,
        "seconds": round(time.perf_counter() - started, 3),
        "created_at": datetime.now().isoformat(timespec="seconds"),
    }
