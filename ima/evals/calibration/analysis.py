"""The statistics of a calibration: pairwise accuracy (targeted and overall), spread,
agreement between repeats, and the verdict on whether the judge discriminates."""

from __future__ import annotations

import itertools
import statistics
from dataclasses import asdict, dataclass
from typing import Any

from ima.evals.calibration.sets import MEAN, REFERENCE
from ima.evals.judge import METRICS, Verdict

PASS_ACCURACY = 0.75
Scores = dict[str, float]  # criterion -> score of one usable verdict


def usable(verdict: Verdict) -> Scores | None:
    """A verdict's scores and their mean; None for a failed verdict (left out)."""
    if verdict.get("status") != "ok":
        return None
    scores = {m: float(verdict["scores"][m]) for m in METRICS}
    scores[MEAN] = statistics.fmean(scores[m] for m in METRICS)
    return scores


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
        return {"accuracy": self.accuracy, **asdict(self), "n": self.n}


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
