"""The bundled PDDL problems as data: the index, the domains and their texts.

`problems/index.yaml` lists every problem (id, domain, file, natural-language goal, optimal
plan and its length, source, license); each domain has a folder with `domain.pddl`,
`domain.yaml` (title, rules for a prompt, a phrase per predicate) and `memory_template.md`
(a manual intrinsic-memory template). `problems/NOTICE.md` says where each file came from.
"""

from __future__ import annotations

import difflib
from functools import cache
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ima.core.errors import UserError

PROBLEMS_DIR = Path(__file__).parent / "problems"
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_M = TypeVar("_M", bound=BaseModel)


class Domain(BaseModel):
    """A planning domain: its PDDL file and the texts an agent's prompt needs."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    title: str
    description: str = Field(min_length=1)
    facts: dict[str, str] = Field(
        description="predicate -> phrase, {0}, {1}, ... the arguments: 'on: {0} is on {1}'"
    )

    @property
    def folder(self) -> Path:
        return PROBLEMS_DIR / self.name

    @property
    def pddl_path(self) -> Path:
        """The domain's PDDL file."""
        return self.folder / "domain.pddl"

    @property
    def memory_template(self) -> str:
        """The manual memory template for this domain (Markdown with headings)."""
        return (self.folder / "memory_template.md").read_text(encoding="utf-8").strip()

    def phrase(self, predicate: str, args: list[str]) -> str:
        """A fact in words: `phrase('on', ['a', 'b'])` -> 'a is on b'.

        A predicate without a phrase is written as PDDL, '(pred a b)'.
        """
        template = self.facts.get(predicate)
        if template is None:
            return "(" + " ".join([predicate, *args]) + ")"
        return template.format(*args)


class Problem(BaseModel):
    """One bundled problem; `ima.environments.pddl.Env(problem)` plays it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    domain: str
    file: str = Field(description="the problem's PDDL file, relative to the problems folder")
    goal: str = Field(min_length=1, description="the goal in words, for a prompt")
    optimal_length: int = Field(ge=1)
    optimal_plan: tuple[str, ...]
    source: str
    license: str

    @model_validator(mode="after")
    def _plan_has_its_length(self) -> Problem:
        if len(self.optimal_plan) != self.optimal_length:
            raise ValueError(
                f"{self.id}: optimal_plan has {len(self.optimal_plan)} actions, "
                f"optimal_length says {self.optimal_length}"
            )
        return self

    @property
    def pddl_path(self) -> Path:
        """The problem's PDDL file."""
        return PROBLEMS_DIR / self.file

    @property
    def domain_info(self) -> Domain:
        """The problem's domain (rules text, fact phrases, memory template)."""
        return get_domain(self.domain)


class _Index(BaseModel):
    model_config = ConfigDict(extra="forbid")
    problems: list[Problem] = Field(min_length=1)


def _read_yaml(path: Path) -> object:
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
    except FileNotFoundError:
        raise UserError(f"PDDL data file missing: {path} (reinstall the package)") from None
    except yaml.YAMLError as exc:
        raise UserError(f"{path} is not valid YAML: {exc}") from None


def _validated(model: type[_M], raw: object, path: Path) -> _M:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "file"
        raise UserError(f"{path}: {where}: {err['msg']}") from None


@cache
def _domains() -> dict[str, Domain]:
    found = {}
    for path in sorted(PROBLEMS_DIR.glob("*/domain.yaml")):
        domain = _validated(Domain, _read_yaml(path), path)
        if domain.name != path.parent.name:
            raise UserError(f"{path}: name {domain.name!r} must be its folder's name")
        found[domain.name] = domain
    return found


@cache
def _problems() -> dict[str, Problem]:
    path = PROBLEMS_DIR / "index.yaml"
    index = _validated(_Index, _read_yaml(path), path)
    found: dict[str, Problem] = {}
    for problem in index.problems:
        if problem.id in found:
            raise UserError(f"{path}: problem id {problem.id!r} appears twice")
        if problem.domain not in _domains():
            raise UserError(f"{path}: {problem.id}: unknown domain {problem.domain!r}")
        if not problem.pddl_path.is_file():
            raise UserError(f"{path}: {problem.id}: file {problem.file} not found")
        found[problem.id] = problem
    return found


def list_domains() -> list[Domain]:
    """The bundled domains, by name."""
    return list(_domains().values())


def get_domain(name: str) -> Domain:
    """A bundled domain by name; an unknown name is a UserError listing the known ones."""
    domains = _domains()
    if name not in domains:
        raise UserError(f"unknown PDDL domain {name!r}: choose one of {', '.join(domains)}")
    return domains[name]


def list_problems(domain: str | None = None) -> list[Problem]:
    """The bundled problems in index order (by domain, then optimal length), optionally of
    one domain."""
    if domain is not None:
        get_domain(domain)
    return [p for p in _problems().values() if domain is None or p.domain == domain]


def get_problem(problem_id: str) -> Problem:
    """A bundled problem by id, e.g. 'blocksworld-03'; an unknown id is a UserError that
    suggests the closest ids."""
    problems = _problems()
    if problem_id in problems:
        return problems[problem_id]
    close = difflib.get_close_matches(problem_id, list(problems), n=3, cutoff=0.6)
    hint = (
        f"did you mean {', '.join(close)}?"
        if close
        else "ima.environments.pddl.list_problems() lists them"
    )
    raise UserError(f"unknown PDDL problem {problem_id!r}: {hint}")
