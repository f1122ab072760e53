"""The paper's numeric benchmark: PDDL planning problems as data and a text environment.

    from ima.environments.pddl import Env, get_problem, list_problems

    problem = get_problem("gripper-02")
    problem.goal                     # the goal in words, for a prompt
    problem.domain_info.description  # the domain's rules, for a prompt
    problem.domain_info.memory_template
    env = Env(problem)
    env.observation(), env.valid_actions()
    env.step("pick ball1 rooma left")
    env.progress, env.success

The problems (`problems/index.yaml`, sources and licenses in `problems/NOTICE.md`) carry
their optimal plans; the environment runs on unified-planning's sequential simulator.
"""

from ima.environments.base import StepResult
from ima.environments.pddl.actions import ActionCall, format_action, parse_action
from ima.environments.pddl.catalog import (
    PROBLEMS_DIR,
    Domain,
    Problem,
    get_domain,
    get_problem,
    list_domains,
    list_problems,
)


def __getattr__(name: str) -> object:
    # unified-planning takes seconds to import: load it when an environment is made, not
    # when the command line lists the domains
    if name == "Env":
        from ima.environments.pddl.environment import Env

        return Env
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "PROBLEMS_DIR",
    "ActionCall",
    "Domain",
    "Env",
    "Problem",
    "StepResult",
    "format_action",
    "get_domain",
    "get_problem",
    "list_domains",
    "list_problems",
    "parse_action",
]
