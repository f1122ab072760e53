"""Prompt tokens per step of the planning team: the whole trajectory in every prompt (the
paper's public code, arm `full`) against intrinsic memory (arm `intrinsic-generic`, and
`none` for reference), at step 5 and at step 30.

    python -m benchmarks.pddl_prompts                       # the embedded model (~10-15 min)
    python -m benchmarks.pddl_prompts --model scripted      # the prompts alone, in seconds

One episode per arm of a problem too long to be solved by chance (blocksworld-23, optimal
plan 19 actions), seed 0, step limit 30, through the benchmark harness's own code
(`ima.evals.bench`, as `ima bench pddl` runs it) in a temporary folder. Prompt tokens are the backend's counts of the acting agent's call at
that step (the planner's, or the helper's when it acted); memory updates are printed
apart, per step, with the whole per-step cost. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from ima.evals.bench.bench import Bench
from ima.evals.bench.plan import BenchPlan
from ima.planning import SolverSettings

ARMS = ("none", "full", "intrinsic-generic")
AT = (5, 30)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="embedded")
    parser.add_argument("--problem", default="blocksworld-23")
    parser.add_argument("--step-limit", type=int, default=30)
    parser.add_argument("--memory-tokens", type=int, default=256)
    args = parser.parse_args(argv)
    plan = BenchPlan(
        env="pddl",
        model=args.model,
        arms=ARMS,
        tasks=(args.problem,),
        seeds=1,
        settings=SolverSettings(step_limit=args.step_limit, memory_tokens=args.memory_tokens),
    )
    with tempfile.TemporaryDirectory() as tmp:
        bench = Bench("pddl", Path(tmp) / "pddl-prompts")
        bench.prepare(plan)
        started = time.perf_counter()
        bench.run_here(bench.pending(plan)[1], lambda kind, episode, detail: None)
        wall = time.perf_counter() - started
        rows = {row["arm"]: row for row in bench.rows()}
    print(
        f"{args.problem}, model {args.model}, step limit {args.step_limit}, budget "
        f"{plan.settings.token_budget}, memory {args.memory_tokens} tokens; {wall:.0f} s in all"
    )
    header = f"{'arm':18} {'steps':>5} " + " ".join(f"{'prompt@' + str(n):>10}" for n in AT)
    print(header + f" {'growth':>7} {'memory update/step':>19} {'tokens/step':>12} {'s/step':>7}")
    prompts: dict[str, dict[int, int]] = {}
    for arm in ARMS:
        row = rows[arm]
        steps = row["episode"]["steps"]
        prompts[arm] = {s["index"]: s["usage"]["input_tokens"] for s in steps}
        shown = [prompts[arm].get(n) for n in AT]
        growth = f"{shown[1] / shown[0]:.2f}x" if all(shown) else "-"
        updates = row["usage"].get("planner", {}).get("memory_update")
        update = (
            f"{(updates['input_tokens'] + updates['output_tokens']) / updates['calls']:,.0f}"
            if updates
            else "-"
        )
        per_step = (row["input_tokens"] + row["output_tokens"]) / max(row["steps"], 1)
        seconds = row["model_seconds"] / max(row["steps"], 1)
        cells = " ".join(f"{v:>10,}" if v else f"{'-':>10}" for v in shown)
        print(
            f"{arm:18} {row['steps']:>5} {cells} {growth:>7} {update:>19} "
            f"{per_step:>12,.0f} {seconds:>7.1f}"
        )
    full, mine = prompts["full"], prompts["intrinsic-generic"]
    for n in AT:
        if n in full and n in mine:
            print(f"step {n}: full / intrinsic prompt tokens = {full[n] / mine[n]:.2f}")
    late = [n for n in range(20, args.step_limit + 1) if n in mine]
    if late:
        values = [mine[n] for n in late]
        print(
            f"intrinsic prompt tokens, steps {late[0]}-{late[-1]}: median "
            f"{statistics.median(values):,.0f}, max {max(values):,} (budget "
            f"{plan.settings.token_budget} + role and current state)"
        )


if __name__ == "__main__":
    main()
