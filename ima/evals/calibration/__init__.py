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

from ima.evals.calibration.analysis import (
    PASS_ACCURACY,
    Tally,
    agreement,
    analyse,
    usable,
    verdict,
)
from ima.evals.calibration.judging import JudgeEvent, calibrate, judge_set
from ima.evals.calibration.markdown import calibration_md
from ima.evals.calibration.sets import (
    MEAN,
    REFERENCE,
    CalibrationSet,
    Design,
    load_set,
    set_directory,
)
from ima.evals.calibration.storage import find_calibration, read_calibrations, write_calibration

__all__ = [
    "MEAN",
    "PASS_ACCURACY",
    "REFERENCE",
    "CalibrationSet",
    "Design",
    "JudgeEvent",
    "Tally",
    "agreement",
    "analyse",
    "calibrate",
    "calibration_md",
    "find_calibration",
    "judge_set",
    "load_set",
    "read_calibrations",
    "set_directory",
    "usable",
    "verdict",
    "write_calibration",
]
