"""What a planning benchmark runs: its episodes (arm x problem x seed) and the settings they
share, stored with the benchmark so that re-running the command continues it and workers
on other machines run the same thing."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

from ima.core.errors import UserError
from ima.pddl import Problem, get_problem
from ima.planning import ARMS, SolverSettings

KIND = "pddl"  # the `kind` of a benchmark's configuration in the evaluation queue
# Settings that must be the same for every episode of one benchmark (they change results).
SHARED = ("model", "temperature", "settings")


@dataclass(frozen=True)
class Episode:
    """One job: a problem played once by one arm with one seed."""

    arm: str
    problem: str
    seed: int

    @property
    def key(self) -> str:
        return f"{self.arm}/{self.problem}/s{self.seed}"

    @property
    def thread_suffix(self) -> str:
        return f"pddl-{self.arm}-{self.problem}-s{self.seed}"

    @property
    def label(self) -> str:
        return f"{self.arm} · {self.problem} · seed {self.seed}"


def problem_fingerprint(problem: Problem) -> str:
    """The problem's PDDL (domain and problem files) as a short hash: a worker whose copy
    differs must not run it."""
    digest = hashlib.sha256()
    for path in (problem.domain_info.pddl_path, problem.pddl_path):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


@dataclass
class BenchPlan:
    model: str
    arms: tuple[str, ...] = ARMS
    problems: tuple[str, ...] = ()
    seeds: int = 5
    base_seed: int = 0
    temperature: float = 0.7
    settings: SolverSettings = field(default_factory=SolverSettings)
    call_timeout: float = 600.0
    command: str = ""

    def episodes(self) -> list[Episode]:
        """Seed by seed, problem by problem, every arm: an interruption leaves the arms
        compared on the same problems and seeds."""
        return [
            Episode(arm, problem, seed)
            for seed in range(self.base_seed, self.base_seed + self.seeds)
            for problem in self.problems
            for arm in self.arms
        ]

    def check(self) -> BenchPlan:
        if self.seeds < 1:
            raise UserError(f"--seeds {self.seeds}: give 1 or more")
        if not self.problems:
            raise UserError("no problem selected: check --problems or --domains")
        if not 0 <= self.temperature <= 2:
            raise UserError(f"--temperature {self.temperature}: give a value from 0 to 2")
        for problem in self.problems:
            get_problem(problem)
        self.settings.check()
        return self

    def config(self) -> dict[str, Any]:
        return {
            "kind": KIND,
            "model": self.model,
            "temperature": self.temperature,
            "settings": asdict(self.settings),
            "call_timeout": self.call_timeout,
            "arms": list(self.arms),
            "problems": list(self.problems),
            "fingerprints": {p: problem_fingerprint(get_problem(p)) for p in self.problems},
            "seeds": self.seeds,
            "base_seed": self.base_seed,
            "command": self.command,
        }


def plan_from_config(config: dict[str, Any]) -> BenchPlan:
    """The plan a stored configuration describes (what a worker runs)."""
    return BenchPlan(
        model=config["model"],
        arms=tuple(config["arms"]),
        problems=tuple(config["problems"]),
        seeds=config["seeds"],
        base_seed=config["base_seed"],
        temperature=config["temperature"],
        # benchmarks begun before the budget's rename keep their settings
        settings=SolverSettings(
            **{("token_budget" if k == "budget" else k): v for k, v in config["settings"].items()}
        ),
        call_timeout=config.get("call_timeout", 600.0),
        command=config.get("command", ""),
    )


def merged_config(old: dict[str, Any] | None, new: dict[str, Any], where: str) -> dict[str, Any]:
    """The configuration to store: the new one, refused if an existing benchmark at the same
    place was run with other shared settings, and grown by the arms, problems and seeds it
    already had (a re-run with fewer of them continues, and reports, the whole)."""
    if old is None:
        return new
    if old.get("kind") != KIND:
        raise UserError(
            f"{where} holds an evaluation of another kind (`ima eval`): choose another --out"
        )
    changed = [
        f"{key} {old.get(key)!r} vs {new[key]!r}" for key in SHARED if old.get(key) != new[key]
    ]
    if changed:
        raise UserError(
            f"{where} holds a benchmark run with other settings ({'; '.join(changed)}): repeat "
            "its settings to continue it (see its config.json), or choose another --out"
        )
    merged = dict(new)
    for key in ("arms", "problems"):
        merged[key] = list(dict.fromkeys([*old[key], *new[key]]))
    merged["fingerprints"] = {**old.get("fingerprints", {}), **new["fingerprints"]}
    first = min(old["base_seed"], new["base_seed"])
    last = max(old["base_seed"] + old["seeds"], new["base_seed"] + new["seeds"])
    merged["base_seed"], merged["seeds"] = first, last - first
    return merged
