"""PDDL planning (the paper's Table 4): the bundled problems of `ima.environments.pddl`, played on
unified-planning's simulator; the reward is AgentBoard's progress rate; the oracle is
the problem's optimal plan; a family is a domain, whose hand-written memory template the
intrinsic-manual arm uses."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from ima.environments.pddl import Env, Problem, get_problem, list_domains, list_problems
from ima.planning.adapter import Adapter, BenchTask, Published

# G-Memory's PDDL runs (the paper's public code forks it) give every problem 30 steps.
STEP_LIMIT = 30


def problem_fingerprint(problem: Problem) -> str:
    """The problem's PDDL (domain and problem files) as a short hash."""
    digest = hashlib.sha256()
    for path in (problem.domain_info.pddl_path, problem.pddl_path):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


class PddlAdapter(Adapter):
    name = "pddl"
    title = "PDDL planning"
    family_word = "domain"
    reward_note = (
        "the progress rate (AgentBoard), the best fraction of the goal's facts reached in an "
        "episode"
    )
    oracle_note = "the problem's optimal plan"
    # Yuen et al., 2025, Table 4: PDDL, progress-rate reward, mean of 5 seeded runs, Ollama.
    published = (
        Published("Gemma3 12B", "intrinsic memory, generic template", "intrinsic-generic", 0.260),
        Published("Gemma3 12B", "intrinsic memory, LLM-written template", "intrinsic-llm", 0.254),
        Published("Gemma3 12B", "ChatDev (periodic summary)", "summary", 0.223),
        Published("Mistral 7B", "intrinsic memory", "intrinsic-generic", 0.064),
    )

    def families(self) -> list[str]:
        return [d.name for d in list_domains()]

    def tasks(self, family: str | None = None) -> list[str]:
        return [p.id for p in list_problems(family)]

    def task(self, task_id: str) -> BenchTask:
        problem = get_problem(task_id)
        return BenchTask(
            adapter=self,
            id=problem.id,
            family=problem.domain,
            goal=problem.goal,
            step_limit=STEP_LIMIT,
            oracle=problem.optimal_plan,
            fingerprint=problem_fingerprint(problem),
        )

    def replay(self, task: BenchTask, actions: Iterable[str]) -> Env:
        return Env.replay(get_problem(task.id), actions)

    def task_fields(self, task: BenchTask) -> dict[str, Any]:
        domain = get_problem(task.id).domain_info
        return {"title": domain.title, "rules": domain.description, "example": task.oracle[0]}

    def memory_template(self, task: BenchTask) -> str:
        return get_problem(task.id).domain_info.memory_template


ADAPTER = PddlAdapter()
