"""How fast the PDDL text environment is: loading a problem, a step, the valid actions.

    python -m benchmarks.pddl_env

For each domain's largest bundled problem (and the import of unified-planning), in this
process: the first `Env` of a problem (reads and parses the PDDL, grounds the actions),
a further `Env` of it (shared parse), one applied step (`Env.step` of a valid action, goal
check and progress included), `valid_actions()` on a fresh state, `observation()`, and
replaying the optimal plan. Medians of repeated runs, in milliseconds; nothing is asserted.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def _ms(fn: Callable[[], object], repeat: int = 1) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    started = time.perf_counter()
    from ima.environments.pddl import Env, list_domains, list_problems

    print(
        f"import ima.environments.pddl (unified-planning): {(time.perf_counter() - started) * 1000:.0f} ms"
    )
    print(
        f"{'problem':14} {'true facts':>10} {'first Env':>9} {'next Env':>8} {'step':>6} "
        f"{'valid acts':>10} {'observe':>7} {'replay plan':>11}  (ms)"
    )
    for domain in list_domains():
        problem = max(list_problems(domain.name), key=lambda p: p.optimal_length)
        first = _ms(lambda p=problem: Env(p))
        again = _ms(lambda p=problem: Env(p), repeat=20)
        steps = []
        for _ in range(20):
            env = Env(problem)
            for action in problem.optimal_plan:
                started = time.perf_counter()
                env.step(action)
                steps.append((time.perf_counter() - started) * 1000)
        step = statistics.median(steps)
        worst = max(steps)

        valid_times = []
        for _ in range(20):
            env = Env(problem)
            env.step(problem.optimal_plan[0])  # a new state: its valid actions not yet listed
            started = time.perf_counter()
            env.valid_actions()
            valid_times.append((time.perf_counter() - started) * 1000)
        valid = statistics.median(valid_times)
        env = Env(problem)
        observe = _ms(env.observation, repeat=20)
        replay = _ms(lambda p=problem: Env.replay(p, p.optimal_plan), repeat=10)
        print(
            f"{problem.id:14} {len(env.facts()):10} {first:9.1f} {again:8.3f} {step:6.2f} "
            f"{valid:10.2f} {observe:7.2f} {replay:11.1f}  "
            f"(step max {worst:.2f}, plan {problem.optimal_length} steps)"
        )


if __name__ == "__main__":
    main()
