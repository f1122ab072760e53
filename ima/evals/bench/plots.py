"""The benchmark's figure, like the paper's Figure 2: reward per memory arm (mean across
seeds, standard deviation as error bar, each seed's mean as a dot), the oracle's reward as
a line, the paper's published rewards marked beside ours (where it reports the benchmark),
and tokens per task per arm."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ima.core.files import atomic_writer
from ima.evals.plots import _pyplot

OURS = "#e39b3c"
PAPER = "#4f6fad"


def reward_plot(
    summaries: Sequence[Any],
    oracle: float,
    model: str,
    path: Path,
    published: Sequence[Any] = (),
) -> Path:
    """The figure of `summaries` (the report's ArmSummary rows) under the `oracle`'s mean
    reward, beside the `published` rewards (model, arm, reward), written to `path`."""
    plt = _pyplot()
    arms = [s.arm for s in summaries]
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(max(8.0, 1.6 * len(arms) + 4), 4.2), gridspec_kw={"width_ratios": [3, 2]}
    )
    xs = list(range(len(arms)))
    left.bar(
        xs,
        [s.reward_mean for s in summaries],
        yerr=[s.reward_sd for s in summaries],
        color=OURS,
        alpha=0.8,
        capsize=4,
        label=f"ours · {model}",
    )
    for x, s in zip(xs, summaries, strict=True):
        left.scatter([x] * len(s.seed_means), s.seed_means, color="black", s=10, zorder=3)
    left.axhline(oracle, color="#6cae75", linestyle="--", linewidth=1, label="oracle")
    markers = {"Gemma3 12B": "D", "Mistral 7B": "v"}
    for model_name, marker in markers.items():
        points = [
            (arms.index(p.arm) + 0.3, p.reward)
            for p in published
            if p.model == model_name and p.arm in arms
        ]
        if points:
            px, py = zip(*points, strict=True)
            left.scatter(
                px, py, marker=marker, color=PAPER, zorder=4, label=f"paper · {model_name}"
            )
    left.set_xticks(xs, arms, rotation=25, ha="right")
    left.set_ylabel("reward")
    left.set_ylim(0, 1.05)
    left.set_title("Reward per memory arm")
    left.legend(fontsize=8, loc="upper right")
    right.bar(xs, [s.tokens for s in summaries], color=OURS, alpha=0.8)
    right.set_xticks(xs, arms, rotation=25, ha="right")
    right.set_ylabel("tokens per task")
    right.set_title("Cost")
    fig.tight_layout()
    with atomic_writer(path, binary=True) as out:
        fig.savefig(out, format="png", dpi=120)
    plt.close(fig)
    return path
