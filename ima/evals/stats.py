"""Descriptive statistics and the Wilcoxon rank-sum test, as in the paper's Table 1."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float | None
    median: float | None
    std: float | None  # sample standard deviation (n - 1); None below two values
    minimum: float | None
    maximum: float | None

    def as_dict(self) -> dict[str, float | int | None]:
        return asdict(self)


def summarize(values: Sequence[float]) -> Summary:
    xs = [float(v) for v in values if v is not None and not math.isnan(v)]
    if not xs:
        return Summary(0, None, None, None, None, None)
    std = statistics.stdev(xs) if len(xs) > 1 else None
    return Summary(len(xs), statistics.fmean(xs), statistics.median(xs), std, min(xs), max(xs))


def ranksum_p(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Two-sided p-value of the Wilcoxon rank-sum test (scipy.stats.ranksums: the normal
    approximation, no tie correction), or None when a group is empty."""
    from scipy.stats import ranksums

    xs = [float(v) for v in x if v is not None and not math.isnan(v)]
    ys = [float(v) for v in y if v is not None and not math.isnan(v)]
    if not xs or not ys:
        return None
    p = float(ranksums(xs, ys).pvalue)
    return None if math.isnan(p) else p


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator
