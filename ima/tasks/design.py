"""What a task's final design holds, as data (the task file's `design:` block).

The documentation step compiles the design part by part, in small structured calls a small
model can fill: one component per `components` entry (named, with a technology, what it
does, why, pros and cons, and how it meets the requirements the entry lists), the plan, the
`estimates` (each in the unit the task fixes, with its derivation), the monthly cost lines
against the `budget`, and the summary. A task without a `design:` block gets one component
per worker role, meeting the requirements that role owns.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ComponentSlot", "DesignPlan", "EstimateSlot"]

_ID = r"^[a-z][a-z0-9_]*$"


class ComponentSlot(BaseModel):
    """A part of the design one component fills: what it is for (`ask`), whose memory the
    documentation draws on besides the accepted proposal (`owner`), the requirements (ids)
    it must say how it meets, and optionally the candidate technologies it chooses among
    (`options`, like an architecture team's tech radar; without them it names its own)."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=_ID)
    title: str = Field(min_length=1)
    ask: str = Field(min_length=1)
    owner: str
    meets: list[str] = []
    options: list[str] = []  # candidate technologies (a tech radar): the answer picks one


class EstimateSlot(BaseModel):
    """A resource estimate: its label, the unit the design states it in, and what to
    estimate (`ask`). The unit is the task's, so a figure is never given in another one."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=_ID)
    label: str = Field(min_length=1)
    unit: str = Field(min_length=1)
    ask: str = Field(min_length=1)


class DesignPlan(BaseModel):
    """The task file's `design:` block: the components, the estimates, the monthly cost
    lines (each estimated in USD per month), the monthly budget they are held against, and
    the requirements (ids) the cost breakdown meets."""

    model_config = ConfigDict(extra="forbid")
    components: list[ComponentSlot] = Field(min_length=1)
    estimates: list[EstimateSlot] = []
    cost_lines: list[str] = []
    budget: float | None = Field(default=None, gt=0)
    costs_meet: list[str] = []
