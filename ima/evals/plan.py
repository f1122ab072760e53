"""What an evaluation runs: its plan (task, shared settings, judge, seeds, templates and
budgets), the paired runs it expands to, and the check that a stored evaluation was planned
alike before it is resumed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ima.core.errors import UserError
from ima.core.settings import RunContext
from ima.evals.judge import MAX_ATTEMPTS
from ima.tasks import Task

# Settings that may differ between invocations on one eval directory (they define runs).
PER_RUN = ("template", "token_budget", "seed")


@dataclass(frozen=True)
class PlannedRun:
    memory_mode: str  # intrinsic | none
    template: str | None  # None for the baseline: it keeps no memory
    budget: int
    seed: int

    @property
    def system(self) -> str:
        return "intrinsic" if self.memory_mode == "intrinsic" else "baseline"

    @property
    def key(self) -> str:
        if self.template is None:
            return f"none/b{self.budget}/s{self.seed}"
        return f"intrinsic/{self.template}/b{self.budget}/s{self.seed}"

    def thread_id(self, task_id: str) -> str:
        return f"{task_id}-{self.key.replace('/', '-')}"

    @property
    def label(self) -> str:
        what = self.system if self.template is None else f"intrinsic/{self.template}"
        return f"{what} · budget {self.budget} · seed {self.seed}"


@dataclass
class EvalPlan:
    task_ref: str
    settings: RunContext  # the shared run settings; template, budget and seed vary per run
    judge_model: str
    judge_seed: int = 0
    pairs: int = 10
    base_seed: int = 0
    templates: tuple[str, ...] = ("generic",)
    budgets: tuple[int, ...] = (2048,)
    llm_coverage: bool = False
    judge_attempts: int = MAX_ATTEMPTS
    command: str = ""

    def runs(self) -> list[PlannedRun]:
        """Pair by pair, so an interruption leaves whole pairs behind it."""
        out = []
        for budget in self.budgets:
            for seed in range(self.base_seed, self.base_seed + self.pairs):
                out += [PlannedRun("intrinsic", t, budget, seed) for t in self.templates]
                out.append(PlannedRun("none", None, budget, seed))
        return out

    def config(self, task: Task) -> dict[str, Any]:
        shared = {k: v for k, v in self.settings.to_dict().items() if k not in PER_RUN}
        return {
            "task": {
                "ref": self.task_ref,
                "id": task.id,
                "version": task.version,
                "fingerprint": task.fingerprint,
            },
            "settings": shared,
            "judge": {
                "model": self.judge_model,
                "seed": self.judge_seed,
                "attempts": self.judge_attempts,
            },
            "llm_coverage": self.llm_coverage,
            "pairs": self.pairs,
            "base_seed": self.base_seed,
            "templates": list(self.templates),
            "budgets": list(self.budgets),
            "requirements": {r.id: r.text for r in task.requirements},
            "command": self.command,
        }


def check_compatible(old: dict[str, Any], new: dict[str, Any], directory: Path) -> None:
    """Stored runs must have been made with the same task, models and shared settings."""
    problems = []
    if old["task"]["fingerprint"] != new["task"]["fingerprint"]:
        problems.append(
            f"task {old['task']['id']} v{old['task']['version']} ({old['task']['fingerprint']}) "
            f"vs {new['task']['id']} v{new['task']['version']} ({new['task']['fingerprint']})"
        )
    # Settings both records know (a setting added by a newer ima version is no conflict).
    for key in sorted(set(old["settings"]) & set(new["settings"])):
        if key == "call_timeout":
            continue  # a timeout does not change results
        if old["settings"].get(key) != new["settings"].get(key):
            problems.append(f"{key} {old['settings'].get(key)!r} vs {new['settings'].get(key)!r}")
    for key in ("model", "seed"):
        if old["judge"][key] != new["judge"][key]:
            problems.append(f"judge {key} {old['judge'][key]!r} vs {new['judge'][key]!r}")
    if old.get("llm_coverage") != new.get("llm_coverage"):
        problems.append(f"llm coverage {old.get('llm_coverage')} vs {new.get('llm_coverage')}")
    if problems:
        raise UserError(
            f"{directory} holds an evaluation made with other settings ({'; '.join(problems)}): "
            "repeat its settings to resume it (see its config.json), or choose another --out"
        )


def plan_from_config(config: dict[str, Any]) -> EvalPlan:
    """The plan a stored configuration describes (what a worker runs)."""
    return EvalPlan(
        task_ref=config["task"]["ref"],
        settings=RunContext(**config["settings"]),
        judge_model=config["judge"]["model"],
        judge_seed=config["judge"]["seed"],
        pairs=config["pairs"],
        base_seed=config["base_seed"],
        templates=tuple(config["templates"]),
        budgets=tuple(config["budgets"]),
        llm_coverage=config.get("llm_coverage", False),
        judge_attempts=config["judge"].get("attempts", MAX_ATTEMPTS),
        command=config.get("command", ""),
    )
