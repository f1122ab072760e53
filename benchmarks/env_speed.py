"""How fast the offline text environments are: per bundled task, the oracle's length, the step
limit, and a seeded random agent's episode to the limit (seconds per step, and the seconds to
replay the whole episode, which a harness that keeps only the actions does every turn); then
the JVM's start for TWC.

    python -m benchmarks.env_speed              # both environments
    python -m benchmarks.env_speed babyai

No model is involved; a few seconds in all. Times depend on the machine and its load;
compare numbers from one invocation.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

from ima.environments import ENVIRONMENTS, EnvTask, list_tasks, make, replay


def random_episode(task: EnvTask, seed: int = 0) -> tuple[list[str], float]:
    """A seeded random agent (valid actions mostly, some nonsense) to the step limit: its
    actions and the seconds spent in the environment (observation, valid actions, step)."""
    rng = random.Random(seed)
    env = make(task)
    spent = 0.0
    for _ in range(task.step_limit):
        started = time.perf_counter()
        env.observation()
        valid = env.valid_actions()
        action = rng.choice(valid) if valid and rng.random() < 0.8 else "dance"
        env.step(action)
        spent += time.perf_counter() - started
    return list(env.actions), spent


def measure(environment: str) -> None:
    print(f"\n{environment}: task, oracle length, step limit, random episode to the limit")
    print(f"{'task':32s} {'oracle':>6s} {'limit':>5s} {'ms/step':>8s} {'replay ms':>9s}")
    per_step = []
    for task in list_tasks(environment):
        actions, spent = random_episode(task)
        started = time.perf_counter()
        replay(task, actions)
        replayed = time.perf_counter() - started
        per_step.append(spent / len(actions))
        print(
            f"{task.id:32s} {task.oracle_length:6d} {task.step_limit:5d} "
            f"{1000 * spent / len(actions):8.2f} {1000 * replayed:9.1f}"
        )
    print(
        f"{environment}: median {1000 * statistics.median(per_step):.2f} ms/step, "
        f"max {1000 * max(per_step):.2f} ms/step over {len(per_step)} tasks"
    )


def jvm_start() -> None:
    """The JVM's start and the first game (class loading), in this process: run first."""
    from textworld_express.constants import JAR_PATH

    from ima.environments import jvm

    started = time.perf_counter()
    make(list_tasks("twc")[0])
    first_game = time.perf_counter() - started
    print(
        f"\nJVM start {jvm.start_seconds(JAR_PATH):.2f} s; "
        f"first TWC game, JVM start included, {first_game:.2f} s"
    )
    jvm.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("environments", nargs="*", help=f"default: {' '.join(ENVIRONMENTS)}")
    args = parser.parse_args(argv)
    chosen = args.environments or list(ENVIRONMENTS)
    if set(chosen) - set(ENVIRONMENTS):
        parser.error(f"choose from {ENVIRONMENTS}")
    if "twc" in chosen:
        jvm_start()
    for environment in chosen:
        measure(environment)
    return 0


if __name__ == "__main__":
    sys.exit(main())
