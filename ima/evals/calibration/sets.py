"""A task's calibration set: `calibration/TASK_ID/` beside the task file, an index.yaml
naming one strong reference design and degraded variants, each with the break a reviewer
must notice and the judge criteria it should lower."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ima.core.errors import UserError
from ima.evals.judge import METRICS
from ima.tasks import TASKS_DIR, Task, available_tasks, load_task

INDEX_FILE = "index.yaml"
REFERENCE = "reference"
MEAN = "mean"  # the mean of the five criteria, for a break no single criterion covers


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
        except json.JSONDecodeError as exc:
            raise UserError(f"{directory / entry.spec}: not valid JSON ({exc.msg})") from None
        if not isinstance(spec, dict):
            raise UserError(f"{directory / entry.spec}: must hold a JSON object")
        return texts[0], spec

    md, spec = read(index.reference, REFERENCE)
    reference = Design(REFERENCE, md, spec)
    variants = []
    for v in index.variants:
        md, spec = read(v, v.id)
        variants.append(Design(v.id, md, spec, " ".join(v.breaks.split()), tuple(v.lowers)))
    return CalibrationSet(task, directory, reference, tuple(variants), digest.hexdigest()[:12])
