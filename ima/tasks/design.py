"""What a task's final design holds, as data (the task file's `design:` block).

The documentation step compiles the design part by part, in small structured calls a small
model can fill: one component per `components` entry (named, with a technology, what it
does, why, pros and cons, and how it meets the requirements the entry lists), the plan, the
`estimates` (each in the unit the task fixes, with its derivation), the monthly cost lines
against the `budget`, and the summary. A task without a `design:` block gets one component
per worker role, meeting the requirements that role owns.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

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
    """A resource estimate: its label, the unit the design states it in, what to estimate
    (`ask`) and, optionally, the monthly cost line (`cost_line`, one of the plan's) that
    prices it: that line's cost is this quantity times a unit price. The unit is the
    task's, so a figure is never given in another one."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=_ID)
    label: str = Field(min_length=1)
    unit: str = Field(min_length=1)
    ask: str = Field(min_length=1)
    cost_line: str | None = None  # the monthly cost line this quantity is priced in


class DesignPlan(BaseModel):
    """The task file's `design:` block: the components, the estimates, the monthly cost
    lines (each in USD per month, priced from the estimate that names it), the monthly
    budget they are held against, and the requirements (ids) the cost breakdown meets."""

    model_config = ConfigDict(extra="forbid")
    components: list[ComponentSlot] = Field(min_length=1)
    estimates: list[EstimateSlot] = []
    cost_lines: list[str] = []
    budget: float | None = Field(default=None, gt=0)
    costs_meet: list[str] = []

    @model_validator(mode="after")
    def _priced_lines(self) -> DesignPlan:
        named = [e.cost_line for e in self.estimates if e.cost_line is not None]
        for line in named:
            if line not in self.cost_lines:
                raise ValueError(
                    f"estimate cost_line {line!r} is not a cost line: use one of {self.cost_lines}"
                )
        if len(set(named)) < len(named):
            raise ValueError("two estimates name the same cost_line: give each line one")
        return self
