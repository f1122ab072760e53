"""What an episode's graph keeps between steps (and its checkpoints store)."""

from __future__ import annotations

import operator
from typing import Annotated, NotRequired

from intrinsic_memory import MemoryChannel
from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from ima.core.state import CallUsage, add_usage


class StepContext(TypedDict):
    """What the acting agent's prompt held, besides its role, the task and the state."""

    history_steps: int  # earlier steps whose action and observation it saw
    memory: str  # its intrinsic memory as it read it ("" in other arms)
    memory_version: int  # 0: empty, or not an intrinsic arm
    summary_step: int  # the summary it read covers steps 1..summary_step (0: none)


class Step(TypedDict):
    """One step of an episode: an agent's answer and what the environment did with it."""

    index: int  # 1-based; what the step limit counts
    agent: str  # planner | helper
    answer: str  # the agent's answer as written
    action: str  # the action read from it (sent to the environment)
    check: bool  # `check valid actions`: a step that lists the actions possible now
    valid: bool
    observation: str  # the environment's answer
    progress: float  # the progress rate after this step
    goal_reached: bool
    done: NotRequired[bool]  # the episode is over: solved, or failed for good (BabyAI, TWC)
    usage: CallUsage  # the agent's model call
    context: StepContext


class Summary(TypedDict):
    step: int  # it covers steps 1..step
    text: str


class EpisodeState(TypedDict, total=False):
    """The episode's state: the conversation the agents read, the steps, the usage of
    every model call per agent and kind, and what the arm keeps: each agent's memory
    (intrinsic arms; in the llm arm with the template it wrote), or summaries."""

    messages: Annotated[list[AnyMessage], add_messages]
    steps: Annotated[list[Step], operator.add]
    usage: Annotated[dict[str, dict[str, CallUsage]], add_usage]
    intrinsic_memory: MemoryChannel  # intrinsic arms: each agent's memory (and template)
    proposal: str  # the stuck planner's repeated action, for the helper ("" when none)
    summaries: NotRequired[Annotated[list[Summary], operator.add]]
    summary_messages: int  # messages the latest summary covers
