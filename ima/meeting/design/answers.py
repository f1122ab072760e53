"""The design's answers checked: a parser per part raises `AnswerError` naming the problem,
which the model is shown on the retry; what still cannot be used stays open.

A component's technology must be one of the task's candidates (or a product's name, when
the task lists none) and its justification its own, not another component's (on the last
attempt a usable technology stands without its reason). A sentence on how a part of a
requirement is met must be the design's own words, say more than its technology's name and
not repeat another part's. A summary must say more than the components' names, and no sum
the design does not cost. An estimate is one of the derivations the brief's figures allow
(`dimensions.derivations`), whole; a unit price is a positive number; a plan's step opens
with an action's verb. A web address, the question repeated or another
script than the brief's is asked about again. A figure the brief's limits contradict is
asked about once, then listed in the design's checks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from intrinsic_memory import scripts_of, strip_foreign

from ima.core.ngrams import words
from ima.meeting.design.checks import (
    copied_share,
    figure_conflicts,
    figures_in,
    junk_reason,
)
from ima.meeting.design.document import Component, Costs, Estimate
from ima.meeting.design.parts import (
    ITEM_CHARS,
    MIN_STEPS,
    STEP_CHARS,
    SUMMARY_CHARS,
    WHY_CHARS,
    estimate_of,
    given_texts,
    how_chars,
    whole_clauses,
    whole_phrase,
    whole_sentences,
)
from ima.models.structured import AnswerError, extract_json
from ima.tasks import ComponentSlot, EstimateSlot, KeyFigure, Task
from ima.tasks.evidence import figure_pattern, normalise, states_figure

__all__ = ["Checker"]

# A plan's step is an action: it opens with one of these verbs (in the imperative).
ACTION_VERBS = frozenset(
    (  # noqa: SIM905 (a list of words reads best as words)
        "add adopt automate build buy choose configure connect create decommission define "
        "deliver deploy design document enable encrypt establish estimate extend finish "
        "harden hire implement import index install integrate introduce label launch load "
        "migrate monitor move negotiate onboard open operate order pilot plan prepare "
        "procure provision publish purchase record register release replicate retrain "
        "review roll run scale secure select set ship sign start switch test train "
        "transfer tune turn upgrade upload validate verify write"
    ).split()
)
TEXTS = ("technology", "why")  # a component's one-line fields
# A summary says at least this many words besides the components' names and linking words,
# a sentence on how a requirement is met this many besides its technology's and component's.
OWN_WORDS = 8
HOW_WORDS = 4
_LINKING = frozenset("a an and the of for with on in to its it is are uses use".split())  # noqa: SIM905
# A sentence whose word 5-grams are this much the brief's or the requirements' is copied.
COPIED = 0.5
# A component's reason with half its word 4-grams in an earlier component's repeats it.
REPEAT_NGRAM = 4
# A sum a summary names is one of the design's costs when this close to it.
TOLERANCE = 0.05
# The plan prompt's placeholder, copied: "Set up the vehicle upload on X before ...".
_PLACEHOLDER = re.compile(r"\s*(?:\b(?:before|after|so that|then)\s*)?(?:\.{3,}|…)[.\s]*$", re.I)
# A plan step builds the pipeline: the agents who designed it are no part of it.
_AGENTS = re.compile(r"\bagents?\b", re.I)
_ID = re.compile(r"r\d+")  # a requirement's id, which says nothing of it
# A pro or con that ends on a verb still wanting its object was cut short: 12-07's make run
# printed "Pros: Data synchronization allows" ("... allows for ..." cut at "for").
_UNFINISHED = re.compile(
    r"\b(?:allows?|provides?|enables?|requires?|offers?|supports?|makes?|ensures?|helps?|"
    r"is|are|can|will|has|have|gives?|lets?)$",
    re.I,
)
# A link is not an explanation (and a small model's links are made up).
_WEB_ADDRESS = re.compile(r"https?://|www\.|\b[\w-]+\.(?:com|org|io|net)/", re.I)
# Words that name no product: a technology made only of them ("Cloud-based platform",
# "EU Cloud Service") says nothing a reader could build on.
_GENERIC = frozenset(
    (  # noqa: SIM905
        "a an the and of for with based eu european cloud clouds service services "
        "platform system systems solution component components pipeline data managed "
        "storage processing stream streaming batch database tool tools technology "
        "software application server servers n a na none tbd todo"
    ).split()
)


def _figure_spans(task: Task, text: str) -> list[tuple[int, int, KeyFigure]]:
    """Where `text` states key figures of the brief: each spelling found, to its word's end
    ("24 h" in "24 hours"). Normalising keeps every character's place."""
    lowered = normalise(text)
    spans = []
    for figure in task.key_figures:
        for spelling in figure.values:
            for match in figure_pattern(spelling).finditer(lowered):
                end = match.end() + re.match(r"[^\W_]*", lowered[match.end() :]).end()
                spans.append((match.start(), end, figure))
    return spans


def clause_figures(task: Task, clause: str) -> dict[str, KeyFigure]:
    """The key figures of the brief `clause` states, by how it spells them ("24 hours")."""
    return {clause[start:end]: figure for start, end, figure in _figure_spans(task, clause)}


def without_figures(task: Task, text: str) -> str:
    """`text` with each key figure it states as one word: a figure of the brief is the
    design's to state, so its words neither copy the brief nor say more than one word."""
    merged: list[list[int]] = []  # spellings of one figure overlap ("99.9", "99.9%")
    for start, end, _ in sorted(_figure_spans(task, text), key=lambda span: span[:2]):
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    for start, end in reversed(merged):
        text = f"{text[:start]} <figure> {text[end:]}"
    return text


class Checker:
    """The parsers of one design's parts: each checks an answer against the brief, the
    requirements and the meeting's instructions, and counts its attempts (the last one
    keeps what is usable)."""

    def __init__(self, task: Task, brief: str, instructions: Sequence[str]) -> None:
        self.task = task
        self.instructions = list(instructions)
        self.sources = given_texts(task, brief)
        self.scripts = scripts_of(brief)
        self.agents = {r.id.lower() for r in task.roles} | {r.name.lower() for r in task.roles}
        self.agent_stems = {" ".join(w[:5] for w in words(r.name)) for r in task.roles}
        self.whys: list[str] = []  # the components' reasons so far: each gives its own

    # -- helpers

    def _problem(self, field: str, text: str, *, own_words: bool = True, question: str = "") -> str:
        reason = junk_reason(text, self.task, self.instructions)
        if reason:
            return f'"{field}" cannot be used: {reason}'
        if _WEB_ADDRESS.search(text):
            return f'"{field}" is a web address; say it in a sentence of your own'
        if strip_foreign(text, self.scripts)[1]:
            return f'"{field}" mixes in another script; write it in the brief\'s language'
        said = without_figures(self.task, text)
        if own_words and copied_share(said, self.sources) >= COPIED:
            return f'"{field}" copies the brief; say it in your own words'
        if question and copied_share(said, [question]) >= COPIED:
            return f'"{field}" repeats the question; answer it'
        return ""

    def _attempts(self) -> Callable[[], bool]:
        """A counter: each call says whether this is the last attempt."""
        seen = [0]

        def last() -> bool:
            seen[0] += 1
            return seen[0] >= 2

        return last

    def _conflict(self, where: str, text: str) -> str:
        found = figure_conflicts(self.task, where, text)
        if not found:
            return ""
        _, stated, brief = found[0]
        return f'it says "{stated}" where the brief has {brief}'

    def _names_an_agent(self, text: str) -> bool:
        """Whether `text` names an agent of the meeting: by id, or by its name with the
        words' endings changed ("Data Engineering Agent's" for the Data Engineer Agent)."""
        lowered = text.lower()
        if any(re.search(rf"\b{re.escape(a)}\b", lowered) for a in self.agents):
            return True
        stems = " ".join(w[:5] for w in words(text))
        return any(f" {name} " in f" {stems} " for name in self.agent_stems)

    # -- parts

    def component_parser(self, slot: ComponentSlot) -> Callable[[str], Component]:
        last = self._attempts()

        def parse(text: str) -> Component:
            final = last()
            data = _object_of(text)
            technology, why = (" ".join(str(data.get(k) or "").split()) for k in TEXTS)
            why = whole_clauses(why, WHY_CHARS)
            if slot.options and technology not in slot.options:
                raise AnswerError(f'"technology" must be one of: {", ".join(slot.options)}')
            if not set(words(technology)) - _GENERIC or self._names_an_agent(technology):
                raise AnswerError(
                    '"technology" must name a product or service by its name, not a kind of one'
                )
            if problem := self._problem("technology", technology, own_words=False):
                raise AnswerError(problem)
            unusable = self._problem("why", why) or self._conflict("why", why)
            if not unusable and not final and copied_share(why, self.whys, REPEAT_NGRAM) >= COPIED:
                unusable = (
                    f'"why" repeats the reason given for another part; say why {technology} '
                    f"suits {slot.title}"
                )
            pros, cons = (self._items(data.get(k)) for k in ("pros", "cons"))
            missing = (
                "" if pros and cons else 'give at least one usable item in "pros" and in "cons"'
            )
            if (unusable or missing) and not final:
                raise AnswerError(unusable or missing)
            # the last answer's technology stands though its reason cannot (12-07: two
            # components of make run lost their technology, and four requirements their how)
            why = "" if unusable else why
            self.whys += [why] if why else []
            return Component(
                id=slot.id,
                title=slot.title,
                name=slot.title,
                technology=technology,
                does=f"Handles {slot.ask}.",
                why=why,
                pros=pros,
                cons=cons,
                open_because=unusable or missing,
            )

        return parse

    def how_parser(
        self,
        technology: str,
        question: str = "",
        said: Sequence[str] = (),
        title: str = "",
        clause: str = "",
    ) -> Callable[[str], str]:
        """One sentence of the design's own on how a component on `technology` meets a
        requirement: not copied (from the brief or the `question`), saying something besides
        the names of the technology and the component (`title`) and its figures, nor what
        was `said` for another part of the requirement again; no junk, cut to its last whole
        clause where it reached the schema's length. Where the part of the requirement asked
        about (its `clause`) states key figures of the brief, the sentence states one of
        them, or is asked again once; if the second answer cannot be used, the first stands.
        A figure the brief contradicts is asked about once, then listed."""
        last = self._attempts()
        figures = clause_figures(self.task, clause)
        named = set(words(f"{technology} {title}")) | _LINKING | {"requirement", "runs", "handle"}
        without_figure: list[str] = []  # an earlier answer whose one fault was that

        def check(how: str, final: bool) -> str:
            # the sentence opens with its technology, as asked: those words copy nothing
            said_here = how.removeprefix(technology).strip() or how
            if problem := self._problem("how", said_here, question=question):
                raise AnswerError(problem)
            # 12-07: "Google Cloud Dataflow runs on Google Cloud Dataflow."; and, asked for
            # a figure, "... keep to 24 hours."
            if len(_own_words(without_figures(self.task, how), named)) < HOW_WORDS:
                raise AnswerError(f'"how" says nothing of what {technology} does for it')
            if technology and technology.lower() in said_here.lower():
                # 12-07: "Google Cloud Dataflow runs on Google Cloud Dataflow, which is a
                # cloud-based platform for processing and analyzing data."
                raise AnswerError(
                    f'"how" names {technology} twice; say what it does for the requirement'
                )
            if said and copied_share(said_here, said, REPEAT_NGRAM) >= COPIED:
                raise AnswerError(
                    '"how" repeats what was said for another part of the requirement; '
                    "say how this part holds"
                )
            if not final and (conflict := self._conflict("how", how)):
                raise AnswerError(conflict)
            # 12-07: R12's "cleared within 24 hours" was met by "helps manage and optimize
            # data replication across multiple regions"
            if (
                not final
                and figures
                and not any(states_figure(f, normalise(how)) for f in figures.values())
            ):
                without_figure.append(how)
                raise AnswerError(
                    f'"how" gives none of the figures of this part ({", ".join(figures)}); '
                    f"say what {technology} does here, with the figure"
                )
            return how

        def parse(text: str) -> str:
            final = last()
            how = " ".join(str(_object_of(text).get("how") or "").split())
            try:
                return check(whole_clauses(how, how_chars(technology)), final)
            except AnswerError:
                if final and without_figure:
                    return without_figure[0]
                raise

        return parse

    def _items(self, value: Any) -> list[str]:
        listed = value if isinstance(value, list) else [value] if value else []
        items = [whole_clauses(" ".join(str(v).split()), ITEM_CHARS) for v in listed]
        items = [i.strip(" .;,") for i in items]
        return [
            i
            for i in items
            if i
            and not _UNFINISHED.search(i)
            and not self._problem("item", i)
            and not self._names_an_agent(i)
        ]

    def estimate_parser(
        self, slot: EstimateSlot, choices: Sequence[tuple[str, float]]
    ) -> Callable[[str], Estimate]:
        """The estimate of the derivation chosen among `choices`, copied whole (a grammar
        sees to it on llama.cpp and Ollama; any other backend's answer is checked here)."""
        results = dict(choices)

        def parse(text: str) -> Estimate:
            derivation = " ".join(str(_object_of(text).get("derivation") or "").split())
            if derivation not in results:
                raise AnswerError('"derivation" must be one of the listed derivations, whole')
            return estimate_of(slot, derivation, results[derivation])

        return parse

    def price_parser(self) -> Callable[[str], float]:
        """A unit price in USD: a positive number, or its digits in a string (the schema's
        pattern); the cost line is computed from it."""

        def parse(text: str) -> float:
            price = _object_of(text).get("price")
            if isinstance(price, str) and re.fullmatch(r"\d+(?:\.\d+)?", price.strip()):
                price = float(price)
            if not isinstance(price, int | float) or isinstance(price, bool) or price <= 0:
                raise AnswerError('"price" needs a positive number of USD')
            return float(price)

        return parse

    def plan_parser(self, components: Sequence[Component]) -> Callable[[str], list[str]]:
        """A plan's usable steps; on the last attempt, those of whichever attempt had more."""
        last = self._attempts()
        earlier: list[str] = []

        def parse(text: str) -> list[str]:
            final = last()
            data = _object_of(text)
            steps = []
            for step in data.get("steps") or []:
                step = " ".join(str(step).split()).strip()
                step = re.sub(r"^(?:step\s*)?\d+[.):]\s*", "", step, flags=re.I)
                step = _PLACEHOLDER.sub("", step)  # the prompt's "... before ..." copied
                step = whole_phrase(step, STEP_CHARS)
                first = step.split(" ", 1)[0].lower() if step else ""
                bad = (
                    self._problem("step", step, own_words=False)
                    or (first not in ACTION_VERBS and "it does not start with an action's verb")
                    or (_AGENTS.search(step) and "the meeting's agents are not the pipeline's")
                )
                if not bad and step not in steps:
                    steps.append(step[0].upper() + step[1:])
            if len(steps) < MIN_STEPS and not final:
                earlier[:] = steps
                raise AnswerError(f"it holds {len(steps)} usable steps; give {MIN_STEPS} or more")
            return steps if len(steps) >= len(earlier) else earlier

        return parse

    def summary_parser(
        self, proposal: str = "", components: Sequence[Component] = (), costs: Costs | None = None
    ) -> Callable[[str], str]:
        """2 or 3 sentences of the design's own: not the brief's, nor the `proposal` on the
        table copied (12-06: the summary strung its lines together), nor the `components`'
        names listed (12-07: "Anonymisation and Access Control, Vehicle upload, ..."), whole
        sentences, and no sum of money that is not one of the `costs`."""
        names = " ".join(f"{c.title} {c.technology}" for c in components)
        named = set(words(names)) | _LINKING
        priced = _money_of(costs) if costs is not None else None

        def parse(text: str) -> str:
            summary = " ".join(str(_object_of(text).get("summary") or "").split())
            summary = whole_sentences(summary, SUMMARY_CHARS)
            if problem := self._problem("summary", summary):
                raise AnswerError(problem)
            if proposal and copied_share(summary, [proposal]) >= COPIED:
                raise AnswerError('"summary" copies the proposal; summarise the components')
            if components and len(_own_words(summary, named)) < OWN_WORDS:
                raise AnswerError(
                    '"summary" only lists the components; say in sentences what the pipeline '
                    "does with the data and how it meets the requirements"
                )
            for figure in figures_in(summary) if priced is not None else ():
                if figure.kind == "money" and not any(_near(figure.amount, p) for p in priced):
                    raise AnswerError(  # 12-07: "The monthly cost is USD 45,000" (the budget)
                        f'"summary" says {figure.text}, which is no cost of the design; '
                        "give the monthly cost as the prompt states it"
                    )
            return summary

        return parse


def _money_of(costs: Costs) -> list[float]:
    """The sums a text may say the design costs: its lines and total, and the budget once
    the total is held against it."""
    found = [c.usd_per_month for c in costs.lines if c.usd_per_month is not None]
    found += [costs.total_usd_per_month] if costs.total_usd_per_month is not None else []
    if costs.within_budget is not None and costs.budget_usd_per_month is not None:
        found.append(costs.budget_usd_per_month)
    return found


def _near(value: float, result: float) -> bool:
    return abs(value - result) <= TOLERANCE * abs(result)


def _own_words(text: str, named: set[str]) -> list[str]:
    """The words of `text` that are not `named` (a plural counts as its singular) nor a
    requirement's id: what a sentence says besides the names it was asked about."""
    return [
        w
        for w in words(text)
        if w not in named and w.rstrip("s") not in named and not _ID.fullmatch(w)
    ]


def _object_of(text: str) -> dict[str, Any]:
    value = extract_json(text)
    if not isinstance(value, dict):
        raise AnswerError("the answer is JSON but not an object")
    return value
