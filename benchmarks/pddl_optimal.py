"""Recompute the bundled PDDL problems' optimal plan lengths and check the stored ones.

    python -m benchmarks.pddl_optimal --pyperplan /tmp/pddl-tools/bin/pyperplan
    python -m benchmarks.pddl_optimal --pyperplan ... --max-length 20   # skip the slow ones

Needs pyperplan (GPL-3.0), installed apart from the project, e.g.
`python3 -m venv /tmp/pddl-tools && /tmp/pddl-tools/bin/pip install pyperplan==2.1`. It is
run as a separate command, never imported: it is an offline tool, not a dependency of this
MIT project. A* with the admissible LM-cut heuristic gives a shortest plan; the script
checks, for every problem in `ima/environments/pddl/problems/index.yaml`, that the plan pyperplan finds has
the stored `optimal_length`, that the stored plan reaches the goal in the environment, and
prints the plan found when the lengths differ. The whole set takes about 5 minutes on one
core (gripper-12, 10 balls and 29 steps, about 4 of them). Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ima.core.errors import UserError
from ima.environments.pddl import Env, Problem, list_problems


def shortest_plan(pyperplan: str, problem: Problem, timeout: float) -> list[str]:
    """pyperplan's A*/LM-cut plan for a problem, in the environment's action text."""
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / problem.pddl_path.name  # pyperplan writes PROBLEM.soln beside it
        shutil.copy(problem.pddl_path, copy)
        subprocess.run(
            [
                pyperplan,
                "-s",
                "astar",
                "-H",
                "lmcut",
                str(problem.domain_info.pddl_path),
                str(copy),
            ],
            check=True,
            capture_output=True,
            timeout=timeout,
        )
        lines = copy.with_name(copy.name + ".soln").read_text().splitlines()
    return [line.strip().strip("()").strip() for line in lines if line.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pyperplan", default="pyperplan", help="the pyperplan command")
    parser.add_argument("--max-length", type=int, default=None, help="skip longer problems")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per problem")
    parser.add_argument("ids", nargs="*", help="problem ids (default: all)")
    args = parser.parse_args(argv)
    if shutil.which(args.pyperplan) is None:
        print(f"pyperplan not found ({args.pyperplan}): install it apart, see the docstring")
        return 2
    failures = 0
    for problem in list_problems():
        if args.ids and problem.id not in args.ids:
            continue
        if args.max_length is not None and problem.optimal_length > args.max_length:
            continue
        started = time.perf_counter()
        try:
            stored_ok = Env.replay(problem, problem.optimal_plan, strict=True).is_goal()
        except UserError as exc:
            stored_ok = False
            print(f"{problem.id}: stored plan invalid: {exc}")
        found = shortest_plan(args.pyperplan, problem, args.timeout)
        same = len(found) == problem.optimal_length
        verdict = "ok" if same and stored_ok else "FAIL"
        failures += verdict == "FAIL"
        seconds = time.perf_counter() - started
        print(
            f"{problem.id:16} stored {problem.optimal_length:3} found {len(found):3} "
            f"stored plan reaches goal: {stored_ok}  {seconds:6.1f} s  {verdict}"
        )
        if not same:
            print("  plan found: " + "; ".join(found))
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
