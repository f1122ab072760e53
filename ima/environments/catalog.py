"""The bundled tasks as data: `tasks/<environment>.yaml`, one file per environment.

Each file lists its tasks (id, family, seed, goal, oracle path, step limit, parameters). They
are generated, never edited by hand: `python -m benchmarks.env_catalog` runs BabyAI's bot and
TextWorld Commonsense's gold paths and writes them again (`--check` compares).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ima.core.errors import UserError, named
from ima.environments.base import EnvTask, step_limit_for

TASKS_DIR = Path(__file__).parent / "tasks"
ENVIRONMENTS = ("babyai", "twc")
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Task(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    family: str = Field(min_length=1)
    seed: int = Field(ge=0)
    goal: str = Field(min_length=1)
    step_limit: int = Field(ge=1)
    oracle: tuple[str, ...] = Field(min_length=1)
    params: dict[str, int] = Field(default_factory=dict)


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")
    environment: str
    tasks: list[_Task] = Field(min_length=1)


def tasks_path(environment: str) -> Path:
    """The data file of one environment's tasks."""
    return TASKS_DIR / f"{environment}.yaml"


def _load(environment: str) -> list[EnvTask]:
    path = tasks_path(environment)
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
        data = _File.model_validate(raw)
    except FileNotFoundError:
        raise UserError(f"task file missing: {path} (reinstall the package)") from None
    except yaml.YAMLError as exc:
        raise UserError(f"{path} is not valid YAML: {exc}") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "file"
        raise UserError(f"{path}: {where}: {err['msg']}") from None
    if data.environment != environment:
        raise UserError(f"{path}: environment {data.environment!r} must be {environment!r}")
    tasks = []
    for t in data.tasks:
        if t.step_limit != step_limit_for(len(t.oracle)):
            raise UserError(
                f"{path}: {t.id}: step_limit {t.step_limit} is not step_limit_for("
                f"{len(t.oracle)}) = {step_limit_for(len(t.oracle))}: regenerate the file "
                "with python -m benchmarks.env_catalog"
            )
        tasks.append(
            EnvTask(
                id=t.id,
                environment=environment,
                family=t.family,
                seed=t.seed,
                goal=t.goal,
                step_limit=t.step_limit,
                oracle=t.oracle,
                params=tuple(t.params.items()),
            )
        )
    return tasks


@cache
def _tasks() -> dict[str, EnvTask]:
    found: dict[str, EnvTask] = {}
    for environment in ENVIRONMENTS:
        for task in _load(environment):
            if task.id in found:
                raise UserError(f"{tasks_path(environment)}: task id {task.id!r} appears twice")
            found[task.id] = task
    return found


def list_tasks(environment: str | None = None) -> list[EnvTask]:
    """The bundled tasks in file order (by level or setting, then seed), optionally of one
    environment ('babyai' or 'twc')."""
    if environment is not None and environment not in ENVIRONMENTS:
        raise UserError(
            f"unknown text environment {environment!r}: choose one of {', '.join(ENVIRONMENTS)}"
        )
    return [t for t in _tasks().values() if environment is None or t.environment == environment]


def get_task(task_id: str) -> EnvTask:
    """A bundled task by id, e.g. 'babyai-gotolocal-s1'; an unknown id is a UserError that
    suggests the closest ids."""
    return named("text-environment task", task_id, _tasks(), "ima.environments.list_tasks()")


def task_of(task: EnvTask | str, environment: str, title: str) -> EnvTask:
    """The task (or the bundled task of that id) an `environment` plays; a task of another
    environment is a UserError."""
    found = get_task(task) if isinstance(task, str) else task
    if found.environment != environment:
        raise UserError(f"{found.id} is a {found.environment} task, not {title}")
    return found
