"""One problem on unified-planning: its PDDL read once, states, actions and goals as text.

The planning itself (applicability, effects, goal tests) is unified-planning's sequential
simulator; this module only names things: facts as words, actions as `stack a b`, and the
reasons an action cannot be applied. A `Compiled` problem is immutable and shared by every
`Env` of that problem in the process (`compile_problem` caches it).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import cache

from unified_planning.engines.sequential_simulator import UPSequentialSimulator
from unified_planning.exceptions import UPException
from unified_planning.io import PDDLReader
from unified_planning.model import FNode, InstantaneousAction, State
from unified_planning.model.walkers import StateEvaluator

from ima.core.errors import UserError
from ima.environments.pddl.actions import ActionCall, format_action
from ima.environments.pddl.catalog import Domain, Problem


class Compiled:
    """A parsed problem with its simulator; states are unified-planning `State`s."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.domain: Domain = problem.domain_info
        try:
            self.model = PDDLReader().parse_problem(
                str(self.domain.pddl_path), str(problem.pddl_path)
            )
        except (UPException, SyntaxError, ValueError) as exc:  # pyparsing errors are ValueErrors
            raise UserError(f"PDDL problem {problem.id} cannot be read: {exc}") from None
        self.simulator = UPSequentialSimulator(self.model)
        self._evaluator = StateEvaluator(self.model)
        em = self.model.environment.expression_manager
        self.actions: dict[str, InstantaneousAction] = {a.name: a for a in self.model.actions}
        self.objects = {o.name: o for o in self.model.all_objects}
        self._object_exp = {name: em.ObjectExp(o) for name, o in self.objects.items()}
        # every ground Boolean fact, in the domain's predicate order, then argument order
        self.fact_nodes: list[FNode] = []
        for fluent in self.model.fluents:
            if not fluent.type.is_bool_type():
                raise UserError(f"PDDL problem {problem.id}: numeric fluents are not supported")
            domains = [list(self.model.objects(p.type)) for p in fluent.signature]
            for args in itertools.product(*domains):
                self.fact_nodes.append(em.FluentExp(fluent, args))
        self.goals: list[FNode] = [g for goal in self.model.goals for g in _conjuncts(goal)]
        self.initial_state: State = self.simulator.get_initial_state()
        self._action_order = {name: i for i, name in enumerate(self.actions)}
        # ground every action now (the simulator does it at its first listing, ~50 ms),
        # so that no step of an episode pays for it
        for _ in self.simulator.get_applicable_actions(self.initial_state):
            pass

    # text ------------------------------------------------------------------------------

    def atom(self, node: FNode) -> str:
        """A ground fact as PDDL text, '(on a b)'."""
        return "(" + " ".join([node.fluent().name, *(str(a) for a in node.args)]) + ")"

    def phrase(self, node: FNode) -> str:
        """A ground condition in words, from the domain's phrases."""
        if node.is_not():
            return "not: " + self.phrase(node.arg(0))
        if node.is_fluent_exp():
            return self.domain.phrase(node.fluent().name, [str(a) for a in node.args])
        return str(node)

    # states ----------------------------------------------------------------------------

    def holds(self, state: State, node: FNode) -> bool:
        """Whether a ground condition is true in a state."""
        return bool(self._evaluator.evaluate(node, state).bool_constant_value())

    def true_facts(self, state: State) -> list[FNode]:
        """The facts true in a state, in a fixed order."""
        return [f for f in self.fact_nodes if state.get_value(f).bool_constant_value()]

    def goal_flags(self, state: State) -> list[bool]:
        """For each goal literal, whether it holds in the state."""
        return [self.holds(state, g) for g in self.goals]

    # actions ---------------------------------------------------------------------------

    def applicable(self, state: State) -> list[str]:
        """The actions applicable in a state, as canonical text, by action then arguments."""
        found = [
            (self._action_order[a.name], format_action(a.name, [str(p) for p in params]))
            for a, params in self.simulator.get_applicable_actions(state)
        ]
        return [text for _, text in sorted(found)]

    def resolve(self, call: ActionCall) -> tuple[InstantaneousAction, tuple[FNode, ...]]:
        """The problem's action and objects for a call; a UserError says what is wrong."""
        action = self.actions.get(call.name)
        if action is None:
            raise UserError(
                f"unknown action {call.name!r}: {self.problem.domain} has "
                + ", ".join(self.actions)
            )
        params = action.parameters
        if len(call.args) != len(params):
            wanted = ", ".join(p.type.name for p in params) or "no arguments"
            raise UserError(
                f"{call.name} takes {len(params)} argument(s) ({wanted}), "
                f"got {len(call.args)}: {call}"
            )
        objects = []
        for i, (name, param) in enumerate(zip(call.args, params, strict=True), start=1):
            obj = self.objects.get(name)
            if obj is None:
                raise UserError(
                    f"no object {name!r} in problem {self.problem.id} "
                    f"(objects: {', '.join(self.objects)})"
                )
            if not param.type.is_compatible(obj.type):
                raise UserError(
                    f"{call.name}: argument {i} must be a {param.type.name}, "
                    f"{name} is a {obj.type.name}"
                )
            objects.append(self._object_exp[name])
        return action, tuple(objects)

    def unmet(
        self, state: State, action: InstantaneousAction, params: Sequence[FNode]
    ) -> list[str]:
        """The preconditions of a ground action that fail in a state, in words."""
        conditions, _ = self.simulator.get_unsatisfied_conditions(state, action, params)
        failed = [c for cond in conditions for c in _conjuncts(cond) if not self.holds(state, c)]
        return [self.phrase(c) for c in failed]

    def apply(self, state: State, action: InstantaneousAction, params: Sequence[FNode]) -> State:
        """The state after a ground action (the caller has checked it is applicable)."""
        successor = self.simulator.apply(state, action, params)
        assert successor is not None, "apply() needs an applicable action"
        return successor

    def is_applicable(
        self, state: State, action: InstantaneousAction, params: Sequence[FNode]
    ) -> bool:
        """Whether a ground action can be applied in a state."""
        return bool(self.simulator.is_applicable(state, action, params))


def _conjuncts(node: FNode) -> list[FNode]:
    """A condition split at its top-level ANDs."""
    if node.is_and():
        return [c for arg in node.args for c in _conjuncts(arg)]
    return [node]


@cache
def compile_problem(problem: Problem) -> Compiled:
    """The problem parsed and its actions ground; cached per process (0.1 s the first time)."""
    return Compiled(problem)
