"""Context construction (Algorithm 1) per call against history length, beside two naive
constructions: recounting every turn's tokens at every call, and the whole history."""

from __future__ import annotations

import random
import re
import statistics
import timeit
from collections.abc import Callable
from typing import Any

from ima.core.settings import RunContext
from ima.core.state import Turn, zero_usage
from ima.core.tokens import count_tokens
from ima.meeting.agent_context import build_context, build_turn_prompt, render_turn
from ima.tasks import Task


def synthetic_transcript(task: Task, length: int, seed: int = 0) -> list[Turn]:
    """`length` turns in the scripted model's style: 1-4 sentences of the brief per turn,
    each token count computed once, as the agent node does."""
    rng = random.Random(seed)
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", task.description) if s.strip()]
    speakers = task.speakers
    transcript: list[Turn] = []
    for i in range(1, length + 1):
        speaker = speakers[i % len(speakers)]
        content = f"{speaker} proposes: " + " ".join(rng.sample(sentences, rng.randint(1, 4)))
        transcript.append(
            Turn(
                index=i,
                speaker=speaker,
                phase="discussion",
                content=content,
                flags=[],
                tokens=count_tokens(render_turn(i, speaker, content)),
                usage=zero_usage(),
            )
        )
    return transcript


def memory_text(task: Task, role_id: str) -> str:
    """A memory of about the size the word limit allows (150 words)."""
    words = task.description.split()
    return f"## {role_id} working memory\n" + "\n".join(
        f"- turn {n}: " + " ".join(words[n * 15 : n * 15 + 15]) for n in range(10)
    )


def naive_recount(
    fixed_tokens: int, memory: str, transcript: list[Turn], budget: int
) -> list[Turn]:
    """Algorithm 1 without cached counts: every turn re-rendered and recounted per call."""
    room = budget - fixed_tokens - count_tokens(memory)
    counted = [
        (t, count_tokens(render_turn(t["index"], t["speaker"], t["content"]))) for t in transcript
    ]
    kept, used = [], 0
    for turn, tokens in reversed(counted):
        if used + tokens > room:
            break
        kept.append(turn)
        used += tokens
    return kept[::-1]


def naive_whole(transcript: list[Turn]) -> int:
    """The whole history in the prompt (the paper's public code): render it all, count it."""
    return count_tokens(
        "".join(render_turn(t["index"], t["speaker"], t["content"]) for t in transcript)
    )


def best_per_call(
    fns: dict[Any, Callable[[], Any]], rounds: int, min_batch: float
) -> tuple[dict[Any, float], list[dict[Any, float]]]:
    """Seconds per call of each function: the best of `rounds` batches of at least
    `min_batch` seconds, the functions taking turns so a busy moment hits them all alike.
    Also every round's timings, for ratios measured back to back."""
    numbers = {}
    for key, fn in fns.items():
        number = 1
        while timeit.Timer(fn).timeit(number) < min_batch:
            number *= 2
        numbers[key] = number
    samples = [
        {key: timeit.Timer(fn).timeit(numbers[key]) / numbers[key] for key, fn in fns.items()}
        for _ in range(rounds)
    ]
    return {key: min(s[key] for s in samples) for key in fns}, samples


def measure(task: Task, lengths: list[int], budget: int = 2048) -> list[dict[str, Any]]:
    role = task.schedule.workers[0]
    settings = RunContext(model="scripted", token_budget=budget, template="generic", seed=0)
    memory = memory_text(task, role)
    longest = synthetic_transcript(task, max(lengths))

    def state_with(transcript: list[Turn], memory: str) -> Any:
        return {
            "brief": task.description,
            "transcript": transcript,
            "memories": {r: {"text": memory} for r in task.speakers},
            **task.schedule.start(),
        }

    # Task, role and instruction: the prompt with no memory and no history.
    fixed = build_turn_prompt(task, role, state_with([], ""), settings, True).tokens
    rows, ours, naive = [], {}, {}
    for length in lengths:
        transcript = longest[-length:]
        state = state_with(transcript, memory)
        context = build_context(
            fixed_tokens=fixed, memory=memory, transcript=transcript, budget=budget
        )
        rows.append(
            {
                "history": length,
                "history_tokens": sum(t["tokens"] for t in transcript),
                "kept_turns": len(context.turns),
                "prompt_tokens": build_turn_prompt(task, role, state, settings, True).tokens,
            }
        )
        ours[length, "ours_context_s"] = lambda t=transcript: build_context(
            fixed_tokens=fixed, memory=memory, transcript=t, budget=budget
        )
        ours[length, "ours_prompt_s"] = lambda s=state: build_turn_prompt(
            task, role, s, settings, True
        )
        naive[length, "naive_recount_s"] = lambda t=transcript: naive_recount(
            fixed, memory, t, budget
        )
        naive[length, "naive_whole_s"] = lambda t=transcript: naive_whole(t)
    ours_best, ours_rounds = best_per_call(ours, rounds=15, min_batch=0.02)
    naive_best, _ = best_per_call(naive, rounds=3, min_batch=0.02)
    for row in rows:
        for (length, name), seconds in (ours_best | naive_best).items():
            if length == row["history"]:
                row[name] = seconds
        # Against the shortest history, measured back to back in each round (median).
        row["ours_prompt_growth"] = statistics.median(
            r[row["history"], "ours_prompt_s"] / r[lengths[0], "ours_prompt_s"] for r in ours_rounds
        )
    return rows
