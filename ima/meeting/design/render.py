"""`design.md`: a design rendered for people, every part under its heading; a part with
nothing usable says so instead of staying silently empty."""

from __future__ import annotations

from ima.meeting.design.document import Component, Design
from ima.meeting.design.parts import budget_verdict

__all__ = ["MISSING", "render_design"]

MISSING = "_Missing: the documentation step could not write this part._"
OPEN_COMPONENT = "this part of the design is still to be decided"


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 10 or value == int(value) else f"{value:,.2f}"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "/") or "-"


def _component(n: int, component: Component) -> str:
    if component.status == "open":
        why = f" ({component.open_because})" if component.open_because else ""
        return f"### {n}. {component.title}\n_Open: no usable answer{why}; {OPEN_COMPONENT}_"
    named = f"{component.name} ({component.technology})"
    if not component.name or component.name == component.title:
        named = component.technology
    lines = [f"### {n}. {component.title}: {named}"]
    lines.append(component.does)
    why = component.why or f"_open: {component.open_because or 'no usable reason'}_"
    lines.append(f"- **Why:** {why}")
    if component.pros:
        lines.append(f"- **Pros:** {'; '.join(component.pros)}")
    if component.cons:
        lines.append(f"- **Cons:** {'; '.join(component.cons)}")
    return "\n".join(lines)


def _estimates(design: Design) -> str:
    parts = []
    if design.estimates:
        rows = ["| Estimate | Value | Derivation |", "|---|---|---|"]
        for e in design.estimates:
            value = "-" if e.value is None else f"{_number(e.value)} {e.unit}"
            derivation = e.derivation or (f"_open: {e.open_because}_" if e.open_because else "-")
            rows.append(f"| {e.label} | {value} | {_cell(derivation)} |")
        parts.append("\n".join(rows))
    costs = design.costs
    if costs.lines:
        rows = ["| Monthly cost | USD | Derivation |", "|---|---:|---|"]
        rows += [
            f"| {c.label} | {_number(c.usd_per_month)} | {_cell(c.derivation)} |"
            for c in costs.lines
        ]
        rows.append(f"| **Total** | **{_number(costs.total_usd_per_month)}** | sum of the lines |")
        parts.append("\n".join(rows))
        if costs.budget_usd_per_month is not None and costs.total_usd_per_month is not None:
            parts.append(
                f"The total of USD {_number(costs.total_usd_per_month)} a month: "
                f"{budget_verdict(costs)}."
            )
    return "\n\n".join(parts) or MISSING


def _requirements(design: Design) -> str:
    titles = {c.id: c.title for c in design.components}
    rows = ["| Requirement | Met by | How |", "|---|---|---|"]
    for row in design.requirements:
        met_by = titles.get(row.met_by or "", row.met_by or "") if row.status == "met" else "open"
        how = row.how if row.status == "met" else "-"
        if row.status == "met" and row.open_parts:
            how += f" _Not said: {'; '.join(row.open_parts)}._"
        rows.append(f"| {row.id}: {_cell(row.requirement)} | {_cell(met_by)} | {_cell(how)} |")
    return "\n".join(rows)


def render_design(design: Design, title: str = "") -> str:
    """The design as Markdown: summary, components, plan, estimates and costs, the
    requirements table, and the checks against the brief."""
    components = "\n\n".join(_component(n, c) for n, c in enumerate(design.components, 1))
    plan = "\n".join(f"{n}. {step}" for n, step in enumerate(design.plan, 1))
    checks = (
        "\n".join(
            f"- {c.where}: {c.stated}, but the brief says {c.brief}" for c in design.conflicts
        )
        or "No figure of the design contradicts the brief."
    )
    sections = [
        f"# {title}" if title else "",
        f"_{design.ending}_" if design.ending else "",
        f"## Summary\n{design.summary or MISSING}",
        f"## Components\n{components or MISSING}",
        f"## High-level plan\n{plan or MISSING}",
        f"## Resource estimates\n{_estimates(design)}",
        f"## Requirements\n{_requirements(design)}" if design.requirements else "",
        f"## Checks against the brief\n{checks}",
    ]
    return "\n\n".join(s for s in sections if s) + "\n"
