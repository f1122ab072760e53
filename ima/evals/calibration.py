"""Judge calibration: can a judge model tell a strong design from degraded ones?

Each bundled task may ship a calibration set beside its file, in `calibration/TASK_ID/`:
an `index.yaml`, one strong reference design and degraded variants, each breaking one thing
a reviewer must notice and naming the judge criteria the break should lower. The judge
scores every design `repeats` times (temperature 0; repeat r uses seed judge_seed + r), and
the analysis reports:

- pairwise accuracy: over every (variant, repeat) pair with two usable verdicts, the share
  where the reference scores above the variant, a tie counting half (so a judge that gives
  random or constant scores sits at 0.5). *Targeted*: on each criterion the variant breaks;
  *overall*: on the mean of the five criteria.
- spread: the sample standard deviation, across designs, of each design's mean score.
- agreement between repeats: the share of (design, criterion) cells whose repeats gave the
  same score, and the mean absolute difference between repeats. At temperature 0 a
  deterministic backend (llama.cpp) repeats itself exactly, so agreement there only
  confirms determinism; it measures real instability on server and API judges.

Verdict: the judge *discriminates* when both accuracies are at least PASS_ACCURACY (0.75:
the reference wins three in four comparisons, net of ties, against designs a human reviewer
ranks below it every time); otherwise it *cannot discriminate* and its scores should not
carry a conclusion. With too few usable verdicts the verdict says so.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ima.core.errors import UserError
from ima.evals.judge import LABELS, MAX_ATTEMPTS, METRICS, judge_design
from ima.storage.files import write_json_atomic, write_text_atomic
from ima.tasks import TASKS_DIR, Task, available_tasks, load_task

INDEX_FILE = "index.yaml"
CALIBRATION_FILE = "calibration.json"
CALIBRATION_MD = "calibration.md"
REFERENCE = "reference"
MEAN = "mean"  # the mean of the five criteria, for a break no single criterion covers
PASS_ACCURACY = 0.75
FORMAT = 1


# ----------------------------------------------------------------------------- the set


class _Files(BaseModel):
    model_config = ConfigDict(extra="forbid")
    design: str
    spec: str


class _Variant(_Files):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    breaks: str
    lowers: list[str] = Field(min_length=1)

    @field_validator("lowers")
    @classmethod
    def _known_criteria(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - {*METRICS, MEAN})
        if unknown:
            raise ValueError(f"unknown criteria {unknown}: use {', '.join([*METRICS, MEAN])}")
        return value


class _Index(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: str
    task_version: int
    reference: _Files
    variants: list[_Variant] = Field(min_length=1)


@dataclass(frozen=True)
class Design:
    id: str
    markdown: str
    spec: Any
    breaks: str = ""
    lowers: tuple[str, ...] = ()


@dataclass(frozen=True)
class CalibrationSet:
    task: Task
    directory: Path
    reference: Design
    variants: tuple[Design, ...]
    fingerprint: str  # of the index and every file it names

    @property
    def designs(self) -> tuple[Design, ...]:
        return (self.reference, *self.variants)


def set_directory(task_ref: str) -> Path:
    """`calibration/TASK_ID/` beside the task's file (bundled tasks: in ima/tasks/)."""
    path = Path(task_ref)
    if path.suffix in {".yaml", ".yml"} or path.exists():
        return path.parent / "calibration" / load_task(task_ref).id
    tasks = available_tasks()
    base = tasks[task_ref].parent if task_ref in tasks else TASKS_DIR
    return base / "calibration" / task_ref


def load_set(task_ref: str, directory: Path | None = None) -> CalibrationSet:
    """The task's calibration set, checked: every file present, every spec valid against
    the task's output schema, written for this task and version."""
    task = load_task(task_ref)
    directory = directory or set_directory(task_ref)
    index_path = directory / INDEX_FILE
    if not index_path.exists():
        raise UserError(
            f"task {task.id} has no calibration set ({index_path} is missing): write one "
            "(see ima/tasks/calibration/data-pipeline/ for the format)"
        )
    try:
        index = _Index.model_validate(yaml.safe_load(index_path.read_text(encoding="utf-8")))
    except (yaml.YAMLError, ValidationError) as exc:
        raise UserError(f"{index_path}: {str(exc).splitlines()[0]}: fix the file") from None
    if index.task != task.id or index.task_version != task.version:
        raise UserError(
            f"{index_path} was written for {index.task} v{index.task_version}, not "
            f"{task.id} v{task.version}: review the designs against the brief and update it"
        )
    ids = [v.id for v in index.variants]
    if REFERENCE in ids or len(set(ids)) != len(ids):
        raise UserError(f"{index_path}: variant ids must be unique and not {REFERENCE!r}")
    digest = hashlib.sha256(index_path.read_bytes())

    def read(entry: _Files, design_id: str) -> tuple[str, Any]:
        texts = []
        for name in (entry.design, entry.spec):
            try:
                raw = (directory / name).read_bytes()
            except OSError:
                raise UserError(f"{index_path}: {design_id} names {name}, not found") from None
            digest.update(name.encode() + b"\0" + raw)
            texts.append(raw.decode("utf-8"))
        try:
            spec = json.loads(texts[1])
            jsonschema.validate(spec, task.output_schema)
        except (json.JSONDecodeError, jsonschema.ValidationError) as exc:
            message = getattr(exc, "message", None) or str(exc)
            raise UserError(f"{directory / entry.spec}: not a valid spec ({message})") from None
        return texts[0], spec

    md, spec = read(index.reference, REFERENCE)
    reference = Design(REFERENCE, md, spec)
    variants = []
    for v in index.variants:
        md, spec = read(v, v.id)
        variants.append(Design(v.id, md, spec, " ".join(v.breaks.split()), tuple(v.lowers)))
    return CalibrationSet(task, directory, reference, tuple(variants), digest.hexdigest()[:12])


# ----------------------------------------------------------------------------- scoring

Scores = dict[str, float]  # criterion -> score of one usable verdict


@dataclass
class JudgeEvent:
    design: str
    repeat: int  # 0-based
    verdict: dict[str, Any] | None = None  # None: about to be judged


def judge_set(
    cal: CalibrationSet,
    judge_for: Callable[[int], BaseChatModel],
    repeats: int,
    attempts: int = MAX_ATTEMPTS,
    notify: Callable[[JudgeEvent], None] = lambda p: None,
) -> dict[str, list[dict[str, Any]]]:
    """Every design's verdicts, one per repeat (`judge_for(r)` gives repeat r's model).
    A model error is recorded as a failed verdict, and the next design goes on."""
    verdicts: dict[str, list[dict[str, Any]]] = {d.id: [] for d in cal.designs}
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
                verdict = {
                    "status": "failed",
                    "scores": {},
                    "rationales": {},
                    "attempts": 0,
                    "error": f"model error: {type(exc).__name__}: {exc}"[:500],
                    "warnings": [],
                    "answers": [],
                    "usage": None,
                }
            verdict["seconds"] = round(time.perf_counter() - started, 3)
            verdicts[design.id].append(verdict)
            notify(JudgeEvent(design.id, repeat, verdict))
    return verdicts


def usable(verdict: dict[str, Any]) -> Scores | None:
    if verdict.get("status") != "ok":
        return None
    scores = {m: float(verdict["scores"][m]) for m in METRICS}
    scores[MEAN] = statistics.fmean(scores[m] for m in METRICS)
    return scores


# ----------------------------------------------------------------------------- analysis


@dataclass
class Tally:
    wins: int = 0
    ties: int = 0
    losses: int = 0

    def add(self, reference: float, variant: float) -> None:
        if reference > variant:
            self.wins += 1
        elif reference == variant:
            self.ties += 1
        else:
            self.losses += 1

    @property
    def n(self) -> int:
        return self.wins + self.ties + self.losses

    @property
    def accuracy(self) -> float | None:
        return (self.wins + 0.5 * self.ties) / self.n if self.n else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "accuracy": self.accuracy,
            "wins": self.wins,
            "ties": self.ties,
            "losses": self.losses,
            "n": self.n,
        }


def _mean(xs: list[float]) -> float | None:
    return statistics.fmean(xs) if xs else None


def _sd(xs: list[float]) -> float | None:
    return statistics.stdev(xs) if len(xs) > 1 else None


def analyse(
    scores: dict[str, list[Scores | None]], lowers: dict[str, tuple[str, ...]]
) -> dict[str, Any]:
    """Accuracy, spread, agreement and the verdict from each design's per-repeat scores
    (None: a failed verdict). `scores` holds REFERENCE and every variant in `lowers`."""
    reference = scores[REFERENCE]
    all_targeted, all_overall = Tally(), Tally()
    per_variant = []
    for variant, criteria in lowers.items():
        targeted, overall = Tally(), Tally()
        for ref, var in zip(reference, scores[variant], strict=True):
            if ref is None or var is None:
                continue
            for criterion in criteria:
                targeted.add(ref[criterion], var[criterion])
                all_targeted.add(ref[criterion], var[criterion])
            overall.add(ref[MEAN], var[MEAN])
            all_overall.add(ref[MEAN], var[MEAN])
        per_variant.append(
            {
                "id": variant,
                "lowers": list(criteria),
                "targeted": targeted.as_dict(),
                "overall": overall.as_dict(),
            }
        )
    means = {d: _mean([s[MEAN] for s in runs if s is not None]) for d, runs in scores.items()}
    design_rows = {
        d: {
            "mean": means[d],
            "by_criterion": {m: _mean([s[m] for s in runs if s is not None]) for m in METRICS},
            "usable": sum(s is not None for s in runs),
            "failed": sum(s is None for s in runs),
        }
        for d, runs in scores.items()
    }
    for row in per_variant:
        ref_mean, var_mean = means[REFERENCE], means[row["id"]]
        row["mean"] = var_mean
        row["delta"] = None if ref_mean is None or var_mean is None else ref_mean - var_mean
    known = [m for m in means.values() if m is not None]
    spread = {
        "sd_of_design_means": _sd(known),
        "min": min(known) if known else None,
        "max": max(known) if known else None,
        "sd_by_criterion": {
            m: _sd(
                [
                    r["by_criterion"][m]
                    for r in design_rows.values()
                    if r["by_criterion"][m] is not None
                ]
            )
            for m in METRICS
        },
    }
    result = {
        "accuracy": {
            "targeted": all_targeted.as_dict(),
            "overall": all_overall.as_dict(),
        },
        "variants": per_variant,
        "designs": design_rows,
        "spread": spread,
        "agreement": agreement(scores),
        "failed_verdicts": sum(r["failed"] for r in design_rows.values()),
        "verdicts": sum(r["failed"] + r["usable"] for r in design_rows.values()),
    }
    result["verdict"] = verdict(result)
    return result


def agreement(scores: dict[str, list[Scores | None]]) -> dict[str, Any]:
    """Between repeats, per (design, criterion) with at least two usable verdicts."""
    cells = 0
    same = 0
    diffs: list[float] = []
    for runs in scores.values():
        ok = [s for s in runs if s is not None]
        if len(ok) < 2:
            continue
        for m in METRICS:
            values = [s[m] for s in ok]
            cells += 1
            same += len(set(values)) == 1
            diffs += [abs(a - b) for a, b in itertools.combinations(values, 2)]
    return {
        "cells": cells,
        "exact": same / cells if cells else None,
        "mean_abs_diff": _mean(diffs),
    }


def verdict(result: dict[str, Any]) -> dict[str, Any]:
    """The one line a reader needs: can this judge tell good from bad designs?"""
    targeted = result["accuracy"]["targeted"]["accuracy"]
    overall = result["accuracy"]["overall"]["accuracy"]
    failed = result["failed_verdicts"]
    tail = f"; {failed} of {result['verdicts']} verdicts failed" if failed else ""
    if targeted is None or overall is None:
        return {
            "discriminates": None,
            "line": f"not enough usable verdicts to calibrate this judge{tail}",
        }
    figures = (
        f"pairwise accuracy {targeted:.0%} on the broken criteria, {overall:.0%} on the mean "
        f"(chance 50%, threshold {PASS_ACCURACY:.0%})"
    )
    if targeted >= PASS_ACCURACY and overall >= PASS_ACCURACY:
        return {"discriminates": True, "line": f"discriminates: {figures}{tail}"}
    return {
        "discriminates": False,
        "line": f"CANNOT DISCRIMINATE: {figures}{tail}; its scores should not carry a conclusion",
    }


# ----------------------------------------------------------------------------- a run


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


# ----------------------------------------------------------------------------- files


def read_calibrations(path: Path) -> dict[str, dict[str, Any]]:
    """judge model -> calibration entry, from a calibration.json ({} when absent)."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        judges = data["judges"]
        if not isinstance(judges, dict):
            raise TypeError("judges is not an object")
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise UserError(f"cannot read {path} ({exc}): delete it and calibrate again") from None
    return judges


def write_calibration(directory: Path, entry: dict[str, Any]) -> tuple[Path, Path]:
    """Add (or replace) this judge's entry in DIR/calibration.json and rewrite
    DIR/calibration.md with every judge calibrated there."""
    path = directory / CALIBRATION_FILE
    judges = read_calibrations(path)
    judges[entry["judge"]["model"]] = entry
    write_json_atomic(path, {"format": FORMAT, "judges": judges})
    lines = ["# Judge calibration", ""]
    for judged in judges.values():
        lines += [*calibration_md(judged, level=2), ""]
    md = directory / CALIBRATION_MD
    write_text_atomic(md, "\n".join(lines).rstrip() + "\n")
    return path, md


def find_calibration(
    directory: Path, judge_model: str | None, given: Path | None = None
) -> tuple[dict[str, Any] | None, str]:
    """The calibration of `judge_model` from `given` or DIR/calibration.json, and a note
    for the report when there is none."""
    path = given or directory / CALIBRATION_FILE
    if given is not None and not given.exists():
        raise UserError(f"calibration file {given} not found: run `ima eval calibrate` first")
    if judge_model is None:  # no config.json: nothing to match
        return None, ""
    judges = read_calibrations(path)
    if judge_model in judges:
        return judges[judge_model], ""
    hint = f"`ima eval calibrate --judge-model {judge_model} --out {directory}`"
    if judges:
        return None, (
            f"{path} calibrates {', '.join(sorted(judges))}, not this judge ({judge_model}): "
            f"run {hint}"
        )
    return None, f"the judge ({judge_model}) is not calibrated: run {hint}"


# ----------------------------------------------------------------------------- Markdown


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0%}"


def _num(x: float | None, spec: str = ".2f") -> str:
    return "n/a" if x is None else format(x, spec)


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _seeds(first: int, n: int) -> str:
    return f"seed {first}" if n == 1 else f"seeds {first} to {first + n - 1}"


def _wtl(t: dict[str, Any]) -> str:
    return f"{_pct(t['accuracy'])} ({t['wins']}/{t['ties']}/{t['losses']})"


def calibration_md(entry: dict[str, Any], level: int = 2) -> list[str]:
    """A Markdown section: the verdict, then accuracy per variant, spread and agreement."""
    a = entry["analysis"]
    h = "#" * level
    judge = entry["judge"]
    lines = [
        f"{h} Judge calibration: {judge['model']}",
        "",
        f"**Verdict: {a['verdict']['line']}.**",
        "",
        f"Calibration set {entry['set']['fingerprint']} for {entry['task']['id']} "
        f"v{entry['task']['version']}: a reference design and {len(a['variants'])} degraded "
        f"variants, each judged {_times(entry['repeats'])} at temperature 0 "
        f"({_seeds(judge['seed'], entry['repeats'])}); {entry['tokens']:,} judge "
        f"tokens, {entry['seconds']:.0f} s, {entry['created_at']}. Accuracy: the share of "
        "comparisons where the reference scores above the variant (a tie counts half; "
        "wins/ties/losses in brackets).",
        "",
        "| Variant | What it breaks | Criteria it should lower | Accuracy on them | "
        "Accuracy on the mean | Mean score | Reference minus variant |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    ref = a["designs"][REFERENCE]
    lines.append(f"| reference | (nothing) | | | | {_num(ref['mean'])} | |")
    for v in a["variants"]:
        lowers = ", ".join(LABELS.get(c, "mean of five") for c in v["lowers"])
        breaks = entry.get("breaks", {}).get(v["id"], "").replace("|", "\\|")
        lines.append(
            f"| {v['id']} | {breaks} | {lowers} | {_wtl(v['targeted'])} | "
            f"{_wtl(v['overall'])} | {_num(v['mean'])} | {_num(v['delta'], '+.2f')} |"
        )
    acc, spread, agree = a["accuracy"], a["spread"], a["agreement"]
    lines += [
        f"| **all** | | | **{_wtl(acc['targeted'])}** | **{_wtl(acc['overall'])}** | | |",
        "",
        f"- Spread: the designs' mean scores range {_num(spread['min'])} to "
        f"{_num(spread['max'])}, sd {_num(spread['sd_of_design_means'])} (per criterion: "
        + ", ".join(f"{LABELS[m]} {_num(spread['sd_by_criterion'][m])}" for m in METRICS)
        + ").",
        (
            f"- Agreement between repeats: {_pct(agree['exact'])} of {agree['cells']} "
            f"(design, criterion) scores identical, mean absolute difference "
            f"{_num(agree['mean_abs_diff'])}."
            if agree["cells"]
            else "- Agreement between repeats: n/a (one repeat, or too few usable verdicts)."
        ),
        f"- Failed verdicts: {a['failed_verdicts']} of {a['verdicts']}; scored but "
        f"degenerate-looking (rationales restate the criteria or repeat each other): "
        f"{entry.get('warned_verdicts', 'n/a')}.",
    ]
    return lines
