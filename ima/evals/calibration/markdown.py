"""A judge's calibration as a Markdown section: the verdict, accuracy per variant, spread
and agreement (report.md and calibration.md show it)."""

from __future__ import annotations

from typing import Any

from ima.evals.calibration.sets import REFERENCE
from ima.evals.judge import LABELS, METRICS


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
