"""What a benchmark runs: its environment, its episodes (arm x task x seed) and the settings
they share, stored with the benchmark so that re-running the command continues it and
workers on other machines run the same thing.

The cross-task arm's episodes form chains: per seed and family, the family's tasks in
catalog order, each episode starting from the memory the previous one ended with (its
`after`). A chain's next episode is queued once the previous one is stored.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ima.core.errors import UserError
from ima.evals.shared import thread_prefix
from ima.planning import ADAPTERS, ARMS, Arm, SolverSettings, get_adapter

# Settings that must be the same for every episode of one benchmark (they change results).
SHARED = ("model", "temperature", "settings")


@dataclass(frozen=True)
class Episode:
    """One job: a task played once by one arm with one seed."""

    arm: str
    task: str
    seed: int
    after: str = ""
    """The cross-task arm: the key of the episode whose final memory this one starts from
    ("" for the first of its chain, and for the other arms)."""

    @property
    def key(self) -> str:
        return f"{self.arm}/{self.task}/s{self.seed}"

    @property
    def label(self) -> str:
        return f"{self.arm} · {self.task} · seed {self.seed}"

    def thread_id(self, evaluation: str, env: str) -> str:
        """Its thread in the database of the benchmark named `evaluation`."""
        return f"{thread_prefix(evaluation)}{env}-{self.arm}-{self.task}-s{self.seed}"

    @classmethod
    def from_run(cls, run: dict[str, Any]) -> Episode:
        """A queued job's episode (one queued before the harness names its task `problem`)."""
        fields = dict(run)
        if "problem" in fields:
            fields["task"] = fields.pop("problem")
        return cls(**fields)


def select_tasks(
    env: str,
    tasks: str | None,
    families: str | None,
    options: tuple[str, str] = ("--tasks", "--families"),
) -> tuple[str, ...]:
    """The task ids chosen by a list of tasks or of families (all bundled tasks by default),
    in catalog order: the order a cross-task chain plays them. `options`: how the two lists
    are called, for the message when both are given."""
    adapter = get_adapter(env)
    if tasks and families:
        raise UserError(f"give {options[0]} or {options[1]}, not both")
    if tasks:
        chosen = {adapter.task(t).id for t in _items(tasks, "task")}
    elif families:
        chosen = {
            t for family in _items(families, adapter.family_word) for t in adapter.tasks(family)
        }
    else:
        return tuple(adapter.tasks())
    return tuple(t for t in adapter.tasks() if t in chosen)


def _items(text: str, what: str) -> list[str]:
    items = list(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    if not items:
        raise UserError(f"empty {what} list: give at least one, comma-separated")
    return items


@dataclass
class BenchPlan:
    env: str
    model: str
    arms: tuple[str, ...] = ARMS
    tasks: tuple[str, ...] = ()
    seeds: int = 5
    base_seed: int = 0
    temperature: float = 0.7
    settings: SolverSettings = field(default_factory=SolverSettings)
    call_timeout: float = 600.0
    command: str = ""

    def chains(self) -> dict[str, list[str]]:
        """The tasks of each family, in the plan's (catalog) order."""
        adapter = get_adapter(self.env)
        found: dict[str, list[str]] = {}
        for task in self.tasks:
            found.setdefault(adapter.task(task).family, []).append(task)
        return found

    def _previous(self) -> dict[str, str]:
        """Each task's predecessor in its family's chain ("" for the first)."""
        return {
            task: chain[i - 1] if i else ""
            for chain in self.chains().values()
            for i, task in enumerate(chain)
        }

    def episodes(self) -> list[Episode]:
        """Seed by seed, task by task, every arm: an interruption leaves the arms compared
        on the same tasks and seeds."""
        previous = self._previous() if any(Arm(a).cross_task for a in self.arms) else {}
        out = []
        for seed in range(self.base_seed, self.base_seed + self.seeds):
            for task in self.tasks:
                for arm in self.arms:
                    before = previous.get(task, "") if Arm(arm).cross_task else ""
                    after = Episode(arm, before, seed).key if before else ""
                    out.append(Episode(arm, task, seed, after))
        return out

    def next_in_chain(self, episode: Episode) -> Episode | None:
        """The cross-task episode that starts from this one's final memory, if any."""
        if not Arm(episode.arm).cross_task:
            return None
        following = {before: task for task, before in self._previous().items() if before}
        task = following.get(episode.task)
        return Episode(episode.arm, task, episode.seed, episode.key) if task else None

    def check(self) -> BenchPlan:
        if self.env not in ADAPTERS:
            raise UserError(f"unknown benchmark {self.env!r}: choose one of {', '.join(ADAPTERS)}")
        if self.seeds < 1:
            raise UserError(f"--seeds {self.seeds}: give 1 or more")
        if not self.tasks:
            raise UserError("no task selected: check the task and family options")
        if not 0 <= self.temperature <= 2:
            raise UserError(f"--temperature {self.temperature}: give a value from 0 to 2")
        for task in self.tasks:
            get_adapter(self.env).task(task)
        self.settings.check()
        return self

    def config(self) -> dict[str, Any]:
        adapter = get_adapter(self.env)
        return {
            "kind": self.env,
            "model": self.model,
            "temperature": self.temperature,
            "settings": asdict(self.settings),
            "call_timeout": self.call_timeout,
            "arms": list(self.arms),
            "tasks": list(self.tasks),
            "fingerprints": {t: adapter.task(t).fingerprint for t in self.tasks},
            "seeds": self.seeds,
            "base_seed": self.base_seed,
            "command": self.command,
        }


def is_bench(config: dict[str, Any]) -> bool:
    """Whether a stored evaluation is a benchmark (its kind is its environment)."""
    return config.get("kind") in ADAPTERS


def upgraded(config: dict[str, Any]) -> dict[str, Any]:
    """A stored configuration in today's terms (a PDDL benchmark stored before the harness
    names its tasks `problems`)."""
    if "problems" in config and "tasks" not in config:
        config = {k: v for k, v in config.items() if k != "problems"} | {
            "tasks": config["problems"]
        }
    return config


def plan_from_config(config: dict[str, Any]) -> BenchPlan:
    """The plan a stored configuration describes (what a worker runs)."""
    config = upgraded(config)
    return BenchPlan(
        env=config["kind"],
        model=config["model"],
        arms=tuple(config["arms"]),
        tasks=tuple(config["tasks"]),
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
    place is of another kind or was run with other shared settings, and grown by the arms,
    tasks and seeds it already had (a re-run with fewer of them continues, and reports, the
    whole). Growing a family whose cross-task chains exist is refused: it would change them."""
    if old is None:
        return new
    old = upgraded(old)
    if old.get("kind") != new["kind"]:
        what = f"a {old['kind']} benchmark" if is_bench(old) else "an `ima eval` evaluation"
        raise UserError(f"{where} holds {what}: choose another --out")
    changed = [
        f"{key} {old.get(key)!r} vs {new[key]!r}" for key in SHARED if old.get(key) != new[key]
    ]
    if changed:
        raise UserError(
            f"{where} holds a benchmark run with other settings ({'; '.join(changed)}): repeat "
            "its settings to continue it (see its config.json), or choose another --out"
        )
    merged = dict(new)
    merged["arms"] = list(dict.fromkeys([*old["arms"], *new["arms"]]))
    catalog = get_adapter(new["kind"]).tasks()
    wanted = {*old["tasks"], *new["tasks"]}
    merged["tasks"] = [t for t in catalog if t in wanted]
    if any(Arm(a).cross_task for a in old["arms"]):
        _same_chains(old, merged, where)
    merged["fingerprints"] = {**old.get("fingerprints", {}), **new["fingerprints"]}
    first = min(old["base_seed"], new["base_seed"])
    last = max(old["base_seed"] + old["seeds"], new["base_seed"] + new["seeds"])
    merged["base_seed"], merged["seeds"] = first, last - first
    return merged


def _same_chains(old: dict[str, Any], merged: dict[str, Any], where: str) -> None:
    before = plan_from_config(old).chains()
    after = plan_from_config(merged).chains()
    for family, chain in before.items():
        if after.get(family) != chain:
            raise UserError(
                f"{where} holds intrinsic-cross chains over {family}'s tasks "
                f"{', '.join(chain)}: adding {', '.join(t for t in after[family] if t not in chain)} "
                "would change them; choose another --out"
            )
