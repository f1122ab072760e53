"""Tasks are data: YAML files that define the brief, roles, schedule and output schema.

Bundled tasks live beside this module; a user's own task is any YAML file of the same
shape, given by path (`ima run --task my_task.yaml`).
"""

from __future__ import annotations

import hashlib
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml
from intrinsic_memory import MemoryTemplate, Phase, Schedule
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ima.core.errors import UserError
from ima.tasks.design import ComponentSlot, DesignPlan, EstimateSlot

__all__ = [
    "ComponentSlot",
    "DesignPlan",
    "EstimateSlot",
    "KeyFigure",
    "Phase",
    "Requirement",
    "Role",
    "Schedule",
    "Task",
    "load_task",
]

TASKS_DIR = Path(__file__).parent
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C parser when libyaml is there


class Role(BaseModel):
    """A role of the meeting. `owns` names the key figures and requirements (by id) that are
    this role's own: what its memory must keep, against which its retention and what its last
    turn had in view are measured besides every item. A role without `owns` owns every item."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_]*$")
    name: str
    description: str
    owns: list[str] | None = None


class Requirement(BaseModel):
    """A key requirement the final design must address (the coverage metric checks it).

    `evidence` lists keyword groups: the design covers the requirement when every group has
    at least one keyword in the design text (case-insensitive, matched at a word start, so
    "blur" also finds "blurred"; spaces, hyphens and underscores in a keyword match each
    other). A requirement without evidence is left to the optional LLM check.
    """

    model_config = ConfigDict(extra="forbid")
    id: str
    title: str = ""  # a few words of its own, what a documentation prompt names it by
    text: str
    evidence: list[list[str]] = []

    @model_validator(mode="after")
    def _no_empty_groups(self) -> Requirement:
        if any(not [k for k in group if k.strip()] for group in self.evidence):
            raise ValueError(f"requirement {self.id}: every evidence group needs a keyword")
        return self


class KeyFigure(BaseModel):
    """A figure of the brief that a grounded design restates (the content metrics check it).

    `values` are accepted spellings, matched like evidence keywords (case-insensitive, at a
    word start; spaces, hyphens and underscores interchangeable) and, when a spelling ends in
    a digit, not followed by more digits ("99.9" does not match "99.95"). `limit` makes the
    figure a constraint a design can contradict: "at_most" (a latency, a retention, the
    budget) or "at_least" (an availability); its amount is its first spelling with a unit
    ("30 day", "USD 45,000").
    """

    model_config = ConfigDict(extra="forbid")
    id: str
    text: str
    values: list[str] = Field(min_length=1)
    limit: Literal["at_most", "at_least"] | None = None

    @model_validator(mode="after")
    def _no_empty_spelling(self) -> KeyFigure:
        if any(not v.strip() for v in self.values):
            raise ValueError(f"key figure {self.id}: empty accepted spelling")
        return self


class Task(BaseModel):
    """A task as data: the brief every agent shares (`description`), the roles, the
    schedule (`Schedule`), an optional manual memory template, the requirements and key
    figures the content metrics check, and what the final design holds (`design`, see
    `DesignPlan`; `design_plan` when the file has none). Load one with
    `load_task(id_or_path)`; the loader validates it and names the problem."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    version: int = Field(ge=1)
    title: str
    description: str = Field(min_length=1)
    roles: list[Role] = Field(min_length=2)
    schedule: Schedule
    manual_template: str = ""
    requirements: list[Requirement] = []
    key_figures: list[KeyFigure] = []
    design: DesignPlan | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_output_schema(cls, data: Any) -> Any:
        if isinstance(data, dict) and "output_schema" in data:
            raise ValueError(
                "output_schema is no longer read: design.json follows the design's own schema; "
                "describe the design's parts under design: (see ima/tasks/data_pipeline.yaml)"
            )
        return data

    @model_validator(mode="after")
    def _check_consistency(self) -> Task:
        ids = [r.id for r in self.roles]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"duplicate role ids: {', '.join(duplicates)}")
        s = self.schedule
        for name in [s.facilitator, s.finalizer, *s.workers, *s.after_round]:
            if name not in ids:
                raise ValueError(f"schedule names unknown role {name!r} (roles: {', '.join(ids)})")
        if self.manual_template.strip():
            MemoryTemplate.of(self.manual_template, kind="manual")  # headings, or a clear error
        self._check_ownership()
        self._check_design()
        return self

    def _check_design(self) -> None:
        if self.design is None:
            return
        ids = {r.id for r in self.roles}
        requirements = {r.id for r in self.requirements}
        for slot in self.design.components:
            if slot.owner not in ids:
                raise ValueError(f"design component {slot.id}: owner {slot.owner!r} is no role")
        for rid in [r for s in self.design.components for r in s.meets] + self.design.costs_meet:
            if rid not in requirements:
                raise ValueError(f"design: {rid!r} is not a requirement of the task")
        slots = [s.id for s in self.design.components]
        if len(set(slots)) < len(slots):
            raise ValueError("design: two components share an id")

    @property
    def design_plan(self) -> DesignPlan:
        """The design's parts: the task's `design`, else one component per worker role
        that meets the requirements the role owns."""
        if self.design is not None:
            return self.design
        requirements = {r.id for r in self.requirements}
        slots = []
        for worker in self.schedule.workers:
            role = self.role(worker)
            slots.append(
                ComponentSlot(
                    id=worker.lower(),
                    title=role.name,
                    ask=f"what {role.name} proposed for its own area",
                    owner=worker,
                    meets=[i for i in role.owns or [] if i in requirements],
                )
            )
        return DesignPlan(components=slots)

    def _check_ownership(self) -> None:
        figures = {f.id for f in self.key_figures}
        requirements = {r.id for r in self.requirements}
        for role in self.roles:
            owns = role.owns or []
            for item in owns:
                if item not in figures | requirements:
                    raise ValueError(
                        f"role {role.id} owns {item!r}, which is neither a key figure nor a "
                        "requirement of the task"
                    )
                if item in figures & requirements:
                    raise ValueError(
                        f"role {role.id} owns {item!r}, the id of both a key figure and a "
                        "requirement: rename one"
                    )
                if owns.count(item) > 1:
                    raise ValueError(f"role {role.id} owns {item!r} twice")
        if all(r.owns is not None for r in self.roles):  # else some role owns every item
            owned = {i for r in self.roles for i in r.owns or []}
            unowned = [i for i in self.key_items if i not in owned]
            if unowned:
                raise ValueError(f"no role owns {', '.join(unowned)}: add each to a role's owns")

    @property
    def key_items(self) -> list[str]:
        """The ids of the key figures, then of the requirements, in the task's order."""
        return [f.id for f in self.key_figures] + [r.id for r in self.requirements]

    def own_items(self, role_id: str) -> list[str]:
        """The key items `role_id` owns, in the task's order: those its `owns` names, or every
        item for a role without `owns` (and for a speaker the task does not name, e.g. HUMAN)."""
        owns = next((r.owns for r in self.roles if r.id == role_id), None)
        return self.key_items if owns is None else [i for i in self.key_items if i in owns]

    @property
    def speakers(self) -> list[str]:
        """Roles that take part in the discussion, in first-appearance order."""
        return self.schedule.speakers

    def role(self, role_id: str) -> Role:
        return next(r for r in self.roles if r.id == role_id)

    @cached_property
    def fingerprint(self) -> str:
        """Short content hash, recorded with each run so edits to a task are visible."""
        data = self.model_dump()
        for role in data["roles"]:  # a task without ownership keeps its earlier fingerprint
            if role["owns"] is None:
                del role["owns"]
        if data["design"] is None:  # so does a task without a design block
            del data["design"]
        dumped = yaml.safe_dump(data, sort_keys=True).encode()
        return hashlib.sha256(dumped).hexdigest()[:12]


def available_tasks() -> dict[str, Path]:
    """Bundled task ids mapped to their files."""
    found = {}
    for path in sorted(TASKS_DIR.glob("*.yaml")):
        try:
            found[load_task_file(path).id] = path
        except UserError:
            continue
    return found


def load_task_file(path: Path) -> Task:
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
    except FileNotFoundError:
        raise UserError(f"task file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read task file {path}: {exc}") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 1}" if where else ""
        raise UserError(f"task file {path} is not valid YAML{line}: fix the syntax") from None
    if not isinstance(raw, dict):
        raise UserError(f"task file {path} must be a YAML mapping (see ima/tasks/*.yaml)")
    try:
        return Task.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "task"
        raise UserError(f"task file {path}: {where}: {err['msg']}") from None


def load_task(ref: str) -> Task:
    """Load a bundled task by id, or any task file by path."""
    path = Path(ref)
    if path.suffix in {".yaml", ".yml"} or path.exists():
        return load_task_file(path)
    tasks = available_tasks()
    if ref not in tasks:
        known = ", ".join(tasks) or "none"
        raise UserError(f"unknown task {ref!r}: use one of {known}, or a path to a task YAML file")
    return load_task_file(tasks[ref])
