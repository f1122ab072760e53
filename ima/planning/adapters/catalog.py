"""What the adapters of `ima.environments` share: tasks, oracle paths and step limits come
from the environment's catalog (`ima/environments/tasks/<name>.yaml`); the goal is the
catalog's, written as the prompt folder's `goal.md` says."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict

from ima import environments, prompts
from ima.core.errors import UserError
from ima.environments import EnvTask, TextEnvironment, get_task, list_tasks
from ima.planning.adapter import Adapter, BenchTask


def task_fingerprint(task: EnvTask) -> str:
    """The catalog's entry (generation parameters, goal, oracle, limit) as a short hash."""
    text = json.dumps(asdict(task), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


class CatalogAdapter(Adapter):
    """An environment of `ima.environments`; its `name` is the catalog's environment."""

    def families(self) -> list[str]:
        return list(dict.fromkeys(t.family for t in list_tasks(self.name)))

    def tasks(self, family: str | None = None) -> list[str]:
        wanted = None if family is None else self._family(family)
        return [t.id for t in list_tasks(self.name) if wanted in (None, t.family)]

    def _family(self, name: str) -> str:
        """A family by name, ignoring case ('gotolocal' is GoToLocal)."""
        known = {f.lower(): f for f in self.families()}
        if name.lower() not in known:
            raise UserError(
                f"unknown {self.title} {self.family_word} {name!r}: choose one of "
                f"{', '.join(known.values())}"
            )
        return known[name.lower()]

    def task(self, task_id: str) -> BenchTask:
        found = get_task(task_id)
        if found.environment != self.name:
            raise UserError(f"{task_id} is a {found.environment} task, not {self.title}")
        return BenchTask(
            adapter=self,
            id=found.id,
            family=found.family,
            goal=prompts.render(f"{self.name}/goal", goal=found.goal),
            step_limit=found.step_limit,
            oracle=found.oracle,
            fingerprint=task_fingerprint(found),
        )

    def replay(self, task: BenchTask, actions: Iterable[str]) -> TextEnvironment:
        return environments.replay(task.id, actions)
