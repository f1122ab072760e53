"""A deterministic offline chat model for tests and plumbing demos.

It plays every role from the call metadata the nodes attach (call kind, role, phase): it
answers in role with sentences drawn from the task brief, votes in the consensus phase,
announces FINALIZE when told everyone accepted, rewrites memory from its own latest turn,
and writes a specification that satisfies the JSON Schema found in the prompt. It never
stands in for a real model: it exists so the graph logic can be tested exactly.
"""

from __future__ import annotations

import json
import random
import re
import time
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from ima.core.tokens import count_tokens


class ScriptedChatModel(BaseChatModel):
    seed: int = 0
    delay: float = 0.0  # seconds per call, so tests can interrupt a run mid-conversation
    reject_rounds: int = 0  # consensus rounds in which the reviewer (ERA-like last voter) rejects
    bad_json: int = 0  # number of specification attempts answered with invalid JSON
    inject: str = ""  # text appended to every agent turn (memory-privacy tests)
    bad_judge: int = 0  # number of judge attempts per design answered with unusable text

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.delay:
            time.sleep(self.delay)
        meta = run_manager.metadata if run_manager else {}
        prompt = "\n".join(str(m.content) for m in messages)
        kind = meta.get("ima_kind", "agent_turn")
        text = {
            "agent_turn": self._turn,
            "memory_update": self._memory,
            "template_generation": self._template,
            "documentation": self._documentation,
            "specification": self._specification,
            "judge": self._judge,
            "requirement_check": self._requirement_check,
        }.get(kind, self._turn)(prompt, meta)
        prompt_tokens, text_tokens = count_tokens(prompt), count_tokens(text)  # once each
        message = AIMessage(
            content=text,
            usage_metadata={
                "input_tokens": prompt_tokens,
                "output_tokens": text_tokens,
                "total_tokens": prompt_tokens + text_tokens,
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _rng(self, meta: dict[str, Any]) -> random.Random:
        return random.Random(f"{self.seed}/{meta.get('ima_role')}/{meta.get('ima_turn')}")

    def _turn(self, prompt: str, meta: dict[str, Any]) -> str:
        role, phase = meta.get("ima_role", "AGENT"), meta.get("ima_phase", "discussion")
        task = prompt.split("# Your role", 1)[0]
        sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", task) if len(s.split()) > 5]
        point = self._rng(meta).choice(sentences) if sentences else "the brief"
        if meta.get("ima_finalize"):
            text = f"FINALIZE. All agents accepted the design; {meta.get('ima_next')} documents it."
        elif meta.get("ima_voting"):
            rejecting = (
                meta.get("ima_last_voter") and meta.get("ima_round", 1) <= self.reject_rounds
            )
            vote = "REJECT" if rejecting else "ACCEPT"
            text = f"{vote}\nAs {role}, the integrated proposal covers this point: {point}"
        elif meta.get("ima_facilitator"):
            text = f"{role} ({phase}): {meta.get('ima_next')}, please address this: {point}"
        else:
            text = f"{role} ({phase}) proposes, for my area: {point}"
        return f"{text} {self.inject}".strip()

    def _memory(self, prompt: str, meta: dict[str, Any]) -> str:
        old = _section(prompt, "## Your memory so far")
        latest = _section(prompt, "## Your latest turn")
        notes = [line for line in old.splitlines() if line.startswith("- turn ")][-5:]
        notes.append(f"- turn {meta.get('ima_turn')}: {' '.join(latest.split()[:16])}")
        return f"## {meta.get('ima_role')} working memory\n" + "\n".join(notes)

    def _template(self, prompt: str, meta: dict[str, Any]) -> str:
        return f"## {meta.get('ima_role')} priorities\n- <priority>\n## Decisions\n- <decision>"

    def _documentation(self, prompt: str, meta: dict[str, Any]) -> str:
        return (
            "## Summary\nThe agents agreed on the design discussed in the meeting.\n\n"
            "## High-level plan\n1. Ingest.\n2. Process.\n3. Train.\n\n"
            "## Resource estimates\nWithin the stated budget."
        )

    def _specification(self, prompt: str, meta: dict[str, Any]) -> str:
        if meta.get("ima_attempt", 1) <= self.bad_json:
            return '{"not valid": '
        match = re.search(r"```json\n(.*?)\n```", prompt, re.DOTALL)
        schema = json.loads(match.group(1)) if match else {}
        return json.dumps(example_instance(schema))

    def _judge(self, prompt: str, meta: dict[str, Any]) -> str:
        """A verdict on the judged run (`ima_subject`): scores 2-9 that vary with it."""
        if meta.get("ima_attempt", 1) <= self.bad_judge:
            return "The design looks reasonable overall, I would give it a good mark."
        rng = random.Random(f"judge/{self.seed}/{meta.get('ima_subject')}")
        metrics = ("scalability", "reliability", "usability", "cost_effectiveness", "documentation")
        verdict = {
            m: {
                "rationale": f"Scripted verdict on {m.replace('_', '-')}.",
                "score": rng.randint(2, 9),
            }
            for m in metrics
        }
        return json.dumps(verdict)

    def _requirement_check(self, prompt: str, meta: dict[str, Any]) -> str:
        rng = random.Random(
            f"check/{self.seed}/{meta.get('ima_subject')}/{meta.get('ima_requirement')}"
        )
        addressed = rng.random() < 0.5
        evidence = "the scripted design mentions it" if addressed else "none"
        return json.dumps({"evidence": evidence, "addressed": addressed})


def example_instance(schema: dict[str, Any]) -> Any:
    """A minimal value satisfying the JSON Schema subset tasks use."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type", "object")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: example_instance(props.get(k, {})) for k in schema.get("required", props)}
    if kind == "array":
        return [example_instance(schema.get("items", {}))] * max(schema.get("minItems", 1), 1)
    if kind in ("integer", "number"):
        return max(schema.get("minimum", 0), 30)
    if kind == "boolean":
        return True
    return "as agreed in the meeting"


def _section(prompt: str, header: str) -> str:
    """Text under a Markdown header, up to the next header of the same level."""
    _, _, rest = prompt.partition(header)
    rest = rest.split("\n", 1)[1] if "\n" in rest else ""
    return re.split(r"\n## ", rest, maxsplit=1)[0].strip()
