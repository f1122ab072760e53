"""Where calibrations are kept: DIR/calibration.json (one entry per judge model) and
DIR/calibration.md (a section per judge), and finding the one an evaluation's judge has."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ima.core.errors import UserError
from ima.core.files import write_json_atomic, write_text_atomic
from ima.evals.calibration.markdown import calibration_md

CALIBRATION_FILE = "calibration.json"
CALIBRATION_MD = "calibration.md"
FORMAT = 1


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
