"""A deterministic offline chat model for tests and plumbing demos.

It reads its prompt as a real model must: which call it is (a meeting turn, a memory
update, the documentation, the JSON specification, a judge's verdict) and what it is asked
(vote, announce FINALIZE, hand over to the next speaker, follow a memory template, write the
requested sections) come from the messages, never from call metadata. So a test that
drives the graph with it also tests the prompts: delete the voting instruction and nobody
votes. Its content is sentences drawn from the task brief. At temperature 0 its answer
depends on the prompt only, like a greedy model; above 0 the seed changes it too.

It never stands in for a real model: it exists so the graph logic can be tested exactly.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool

from ima.core.tokens import count_tokens
from ima.models.tool_calls import json_answers

_QUESTION = re.compile(
    r"Question for you, (?P<role>\w+), in round (?P<round>\d+) of the (?P<phase>\w+) phase\. "
    r"(?P<ask>.*?) Answer in at most",
    re.S,
)
_WITHHELD = "The design is agreed by everyone"
_TECHNOLOGIES = (
    "Managed Kafka",
    "Object storage",
    "Managed Spark",
    "Kubernetes jobs",
)  # a facilitator's turn without the marker
_UNUSABLE = "The design looks reasonable overall (draft {attempt}); I would give it a good mark."


class ScriptedChatModel(BaseChatModel):
    seed: int = 0
    temperature: float = 0.0
    delay: float = 0.0  # seconds per call, so tests can interrupt a run mid-conversation
    reject_rounds: int = 0  # consensus rounds in which `rejecter` votes REJECT
    rejecter: str = "ERA"  # the role that rejects (the data-pipeline task's reviewer)
    bad_json: int = 0  # design components' attempts answered with invalid JSON (first, both)
    inject: str = ""  # text appended to every meeting turn (memory-privacy tests)
    bad_judge: int = 0  # verdict attempts answered with unusable text
    withhold_finalize: int = 0  # answers after consensus that leave the FINALIZE marker out

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
        prompt = "\n".join(str(m.content) for m in messages)
        tools = kwargs.get("tools") or []
        calls = self._tool_calls(messages, tools) if tools else []
        text = "" if calls else self._answer(messages, prompt)
        if tools and not calls:  # what the tools answered, summed up
            text = self._after_tools(messages)
        prompt_tokens, text_tokens = count_tokens(prompt), count_tokens(text)  # once each
        message = AIMessage(
            content=text,
            tool_calls=calls,
            usage_metadata={
                "input_tokens": prompt_tokens,
                "output_tokens": text_tokens,
                "total_tokens": prompt_tokens + text_tokens,
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable:
        """Tool calling, scripted: each request is passed to every bound tool in turn, then
        the answer sums up what they said."""
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def with_structured_output(
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable:
        """A JSON mode, as the embedded model has: the scripted model writes the JSON its
        prompt asks for, and the answer is passed on (parsed where it parses)."""
        return json_answers(self, include_raw)

    @staticmethod
    def _since_request(messages: list[BaseMessage]) -> list[BaseMessage]:
        start = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
        return messages[start + 1 :]

    def _tool_calls(self, messages: list[BaseMessage], tools: list[dict[str, Any]]) -> list:
        """A call, with the latest request, of the first tool that has not answered it yet
        (one at a time, so handoffs and subagents each get their turn); none once all have."""
        answered = {m.name for m in self._since_request(messages) if isinstance(m, ToolMessage)}
        waiting = [t["function"] for t in tools if t["function"]["name"] not in answered]
        if not waiting:
            return []
        request = next((m.text for m in reversed(messages) if isinstance(m, HumanMessage)), "")
        fields = list((waiting[0].get("parameters") or {}).get("properties") or {})
        digest = hashlib.sha256(f"{request}/{waiting[0]['name']}".encode()).hexdigest()[:8]
        args = {fields[0]: request} if fields else {}
        return [{"name": waiting[0]["name"], "args": args, "id": f"call_{digest}"}]

    def _after_tools(self, messages: list[BaseMessage]) -> str:
        said = [
            f"{m.name or 'a tool'}: {' '.join(m.text.split()[:16])}"
            for m in self._since_request(messages)
            if isinstance(m, ToolMessage)
        ]
        return "Here is what I found. " + " | ".join(said)

    def _answer(self, messages: list[BaseMessage], prompt: str) -> str:
        """What was asked, read from the last instruction the model received."""
        ask = str(messages[-1].content)
        if ask.startswith(("# Update your memory", "# Edit your memory")):
            return self._memory(prompt, edit=ask.startswith("# Edit"))
        if ask.startswith("# Prepare your memory template"):
            return self._template(prompt)
        if ask.startswith("# Step "):  # the planning benchmark: the next action
            return self._action(prompt)
        if ask.startswith("# Summarise the trajectory"):
            return self._summary(ask)
        if "# Review a design" in prompt:
            return self._judge(messages, prompt)
        if "# Check one requirement" in prompt:
            return self._requirement_check(prompt)
        if ask.startswith("# Extract lessons"):
            return self._lessons(prompt)
        if ask.startswith(("# Document the agreed design", "## Part: how ")):
            return self._design_part(prompt, retried="An earlier answer could not be used" in ask)
        return self._turn(prompt)

    # -- reading the prompt

    def _rng(self, prompt: str) -> random.Random:
        digest = hashlib.sha256(prompt.encode()).hexdigest()[:16]
        return random.Random(f"{self.seed}/{digest}" if self.temperature > 0 else digest)

    @staticmethod
    def _role(prompt: str) -> str:
        found = re.search(r"# Your role\nYou are .*? \((\w+)\)", prompt)
        return found.group(1) if found else "AGENT"

    def _point(self, prompt: str) -> str:
        """A sentence of the task brief (the text under `# Task`, up to the next heading or
        the meeting notes: the shared layout puts the roster and the turns after it)."""
        brief = re.split(
            r"^# |^Meeting notes", prompt.split("# Task", 1)[-1], maxsplit=1, flags=re.M
        )[0]
        sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", brief) if len(s.split()) > 5]
        return self._rng(prompt).choice(sentences) if sentences else "the brief"

    # -- answers

    def _turn(self, prompt: str) -> str:
        question = _QUESTION.search(prompt)
        if question is None:
            return f"{self._role(prompt)}: {self._point(prompt)}"
        role, phase, ask = question["role"], question["phase"], question["ask"]
        point = self._point(prompt)
        if "Start your answer with the word FINALIZE" in ask:
            finalizer = re.search(r"hand over to (\w+)", ask)
            who = finalizer.group(1) if finalizer else "the finaliser"
            withheld = prompt.count(_WITHHELD)
            if withheld < self.withhold_finalize:
                text = f"{_WITHHELD}; {who} documents it."
            else:
                text = f"FINALIZE. All agents accepted the design; {who} documents it."
        elif "Start your answer with ACCEPT or REJECT" in ask:
            rejecting = role == self.rejecter and int(question["round"]) <= self.reject_rounds
            if rejecting:  # an objection names the requirement it defends
                own = re.search(r"against (\S+) \(", ask) or re.search(r"\b(R\d+)\b", prompt)
                text = f"REJECT\n{own.group(1) if own else 'The brief'} is not met: {point}"
            else:
                text = f"ACCEPT\nAs {role}, the integrated proposal covers this point: {point}"
        elif nxt := re.search(r"what exactly (\w+) should address next", ask):
            text = f"{role} ({phase}): {nxt.group(1)}, please address this: {point}"
        else:
            topic = " ".join(ask.split()[:8])
            text = f'{role} ({phase}) on "{topic}": for my area, {point}'
        return f"{text} {self.inject}".strip()

    def _memory(self, prompt: str, edit: bool) -> str:
        """Notes from the latest turn under the sections they fit: the whole memory again
        (old notes kept, the newest first to go) for a rewrite, add operations for an edit."""
        turn = re.search(r"## Your latest turn \(turn (\w+)\)", prompt)
        latest = " ".join(_between(prompt, "## Your latest turn").split())
        new = f"turn {turn.group(1) if turn else '?'}: {' '.join(latest.split()[:12])}"
        words = re.search(r"at most (\d+) words", prompt)
        notes_limit = re.search(r"At most (\d+) notes in all", prompt)
        limit = int(words.group(1)) if words else 20
        if edit:
            keys = re.findall(r"^## .*? \[(\w+)\]", prompt, re.M)
            old: dict[str, list[str]] = {key: [] for key in keys}
        else:
            skeleton = _json_object(_between(prompt, "## Template", "## Your memory so far"))
            keys = [n["section"] for n in skeleton.get("notes", [])]
            memory = _json_object(_between(prompt, "## Your memory so far", "## Your latest turn"))
            old = {key: [] for key in keys}
            for note in memory.get("notes", []):
                old.setdefault(note["section"], []).append(str(note["note"]))
        additions: dict[str, str] = {}
        for key in keys:
            if re.search(r"contribution|proposal|priorit", key):
                additions[key] = new
            elif re.search(r"decision|status|consensus", key) and "ACCEPT" in latest:
                additions[key] = f"accepted: {' '.join(latest.split()[1:10])}"
            elif re.search(r"requirement|constraint", key):
                sentence = re.search(r"[A-Z][^.:]*\d[^.]*\.", latest)
                if sentence:
                    additions[key] = sentence.group(0)
        if not additions and keys:  # a template with none of these sections: its first
            additions[keys[0]] = new
        additions = {k: " ".join(v.split()[:limit]) for k, v in additions.items()}
        if edit:
            return json.dumps({"edits": [{"to": k, "add": v} for k, v in additions.items()]})
        keep = int(notes_limit.group(1)) if notes_limit else 2
        notes = []
        for key in keys:
            for note in dict.fromkeys([*old[key], *([additions[key]] if key in additions else [])]):
                notes.append({"section": key, "note": note})
        return json.dumps({"notes": notes[-keep:]})

    def _action(self, prompt: str) -> str:
        """A random walk that reads its prompt: an action from the valid actions the latest
        observation listed, else a request for that list."""
        observations = re.findall(r"^Observation \d+: (.*)$", prompt, re.M)
        latest = observations[-1] if observations else ""
        if latest.startswith("Valid actions now: "):
            actions = latest.removeprefix("Valid actions now: ").split(", ")
            return self._rng(prompt).choice(actions)
        return "check valid actions"

    def _summary(self, ask: str) -> str:
        steps = [line for line in _between(ask, "## Steps since").splitlines() if line.strip()]
        done = "; ".join(" ".join(line.split()[:8]) for line in steps[-3:]) or "nothing yet"
        return f"Done: {done}.\nNext: keep going towards the goal."

    def _template(self, prompt: str) -> str:
        role = self._role(prompt)
        return f"## {role} priorities\n- <priority>\n## Decisions\n- <decision>"

    def _design_part(self, ask: str, retried: bool) -> str:
        """The part of the design the prompt asks for (on a retry, the question before it),
        as the JSON object it describes: a component (its requirements read from the
        prompt), the estimates it lists, a unit price, the plan of the components it lists,
        or the summary."""
        rng = self._rng(ask)
        if part := re.search(r"^## Part \d+: (.+)$", ask, re.M):
            if (2 if retried else 1) <= self.bad_json:
                return '{"technology": '
            title = part.group(1).strip()
            offered = re.search(r"the one of these it runs on: (.+);\n", ask)
            tech = rng.choice(offered.group(1).split("; ") if offered else _TECHNOLOGIES)
            return json.dumps(
                {
                    "technology": tech,
                    "why": f"{tech} suits the {title.lower()} with little to operate.",
                    "pros": ["managed by the provider"],
                    "cons": ["ties the design to one provider"],
                }
            )
        if how := re.search(r"^## Part: how (.+) meets (R\w+)$", ask, re.M):
            title, requirement = how.groups()
            runs_on = re.search(r"^Component: .+?, on (.+?)\. Requirement", ask, re.M)
            tech = runs_on.group(1) if runs_on else title  # the sentence opens with it
            # the first three words of the part asked about (of the requirement when it is
            # one part): each part's sentence its own, and three words copy nothing
            part = re.search(r'one part of it: "([^"]+)', ask) or re.search(
                r'of the brief, [^:]+: "([^"]+)', ask
            )
            text = part.group(1) if part else requirement
            words = " ".join(text.lower().split()[:3])
            # and the figures it keeps to, as asked ("5 minutes", "99.9%", "8-hour window")
            figures = re.findall(r"\d[\d,.]*(?:%|[ -][A-Za-z][\w/]*(?: window| per \w+)?)", text)
            keeps = f", keeping to {', '.join(figures)}" if figures else ""
            return json.dumps({"how": f"{tech} sees to it that {words} holds{keeps}."})
        if "## Part: resource estimates" in ask:
            listed = ask.split("each with its result:")[-1]  # "- DERIVATION = RESULT UNIT"
            choices = re.findall(r"^- (.+?) = [\d.,]+ [^=\n]+$", listed, re.M)
            return json.dumps({"derivation": choices[0] if choices else ""})
        if "## Part: unit price" in ask:
            return json.dumps({"price": 2})
        components = re.findall(r"^- ([^:\n]+): (.+)$", _between(ask, "The components"), re.M)
        if "## Part: high-level plan" in ask:
            steps = [f"Set up the {c.lower()} on {t}" for c, t in components] or [
                "Set up the pipeline's first component",
                "Connect the components end to end",
                "Test the pipeline against the brief",
            ]
            return json.dumps({"steps": steps[:6]})
        names = ", ".join(c.lower() for c, _ in components) or "its components"
        return json.dumps(
            {
                "summary": "The pipeline carries every drive from the vehicle to a training "
                f"snapshot within the brief's limits. It is built from {names}."
            }
        )

    def _judge(self, messages: list[BaseMessage], prompt: str) -> str:
        """A verdict with scores 2-9 that depend on the judged design, for every criterion
        the prompt's JSON Schema lists. Unusable answers come first when `bad_judge` says so;
        the attempt is read from its own previous answer, which a retry shows it."""
        previous = [m for m in messages if isinstance(m, AIMessage)]
        drafted = re.search(r"\(draft (\d+)\)", str(previous[-1].content)) if previous else None
        attempt = int(drafted.group(1)) + 1 if drafted else 1 + len(previous)
        if attempt <= self.bad_judge:
            return _UNUSABLE.format(attempt=attempt)
        schema = _json_blocks(prompt)[-1] if _json_blocks(prompt) else {}
        design = _between(prompt, "## The design", "## Its JSON specification")
        rng = self._rng(design)
        verdict = {
            m: {
                "rationale": f"Scripted verdict on {m.replace('_', '-')}.",
                "score": rng.randint(2, 9),
            }
            for m in schema.get("properties", {})
        }
        return json.dumps(verdict)

    def _requirement_check(self, prompt: str) -> str:
        requirement = _between(prompt, "## The requirement", "## Your answer")
        design = _between(prompt, "## The design", "## Its JSON specification")
        addressed = self._rng(design + requirement).random() < 0.5
        evidence = "the scripted design mentions it" if addressed else "none"
        return json.dumps({"evidence": evidence, "addressed": addressed})

    def _lessons(self, prompt: str) -> str:
        memory = _between(prompt, "## Your working memory")
        bullets = [line for line in memory.splitlines() if line.startswith("- ")]
        return "\n".join(bullets[:3])


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


def _between(prompt: str, start: str, end: str | None = None) -> str:
    """The text after the line starting with `start`, up to the line starting with `end`
    (the texts themselves may hold Markdown headings, so a known end marker is needed)."""
    _, found, rest = prompt.partition(start)
    if not found:
        return ""
    rest = rest.split("\n", 1)[1] if "\n" in rest else ""
    return (rest.split("\n" + end, 1)[0] if end else rest).strip()


def _json_object(text: str) -> dict[str, Any]:
    """The JSON object at the start of `text` ({} when there is none)."""
    try:
        value, _ = json.JSONDecoder().raw_decode(text.strip())
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _json_blocks(prompt: str) -> list[dict[str, Any]]:
    blocks = []
    for block in re.findall(r"```json\n(.*?)\n```", prompt, re.DOTALL):
        try:
            blocks.append(json.loads(block))
        except json.JSONDecodeError:
            continue
    return [b for b in blocks if isinstance(b, dict)]
