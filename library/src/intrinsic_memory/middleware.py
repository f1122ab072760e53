"""Intrinsic memory for an agent made with `langchain.agents.create_agent`.

    agent = create_agent(model, tools, middleware=[IntrinsicMemoryMiddleware(
        memory, agent="researcher", token_budget=2048, system_prompt="You research...")])

Each model call of that agent sees its system prompt, its task, its own memory and the
newest whole messages that fit the budget (`fit_context`); the saved transcript is
unchanged. The system prompt counts in the budget: given to the middleware, a budget that
cannot hold it is refused when the middleware is made; given to `create_agent`, at the
first model call. After the agent's turn its memory is updated from its own output into
`intrinsic_memory[agent]`.

A supervisor whose subagents are tools: give each subagent the middleware and hand it to
the supervisor as `subagent_tool(subagent, name=..., description=...)`; the supervisor's
`create_agent(..., state_schema=IntrinsicMemoryState)` then keeps every subagent's memory
between calls, and parallel calls keep both updates.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.prebuilt import InjectedState
from langgraph.runtime import Runtime
from langgraph.types import Command

from intrinsic_memory.context import check_budget, fit_context
from intrinsic_memory.manager import IntrinsicMemory
from intrinsic_memory.nodes import amemory_step, memory_step
from intrinsic_memory.state import MEMORY_KEY, MemoryChannel, memory_of, own_output
from intrinsic_memory.tokens import TokenCounter, count_message_tokens


# Here, not beside the other state types: langchain.agents costs a second to import, which
# graphs without create_agent should not pay.
class IntrinsicMemoryState(AgentState):
    """`create_agent` state with each agent's memory (`state_schema=` of a supervisor whose
    subagents keep memory; the middleware adds it to its own agent by itself)."""

    intrinsic_memory: NotRequired[MemoryChannel]


class IntrinsicMemoryMiddleware(AgentMiddleware[IntrinsicMemoryState, Any]):
    """Gives one `create_agent` agent intrinsic memory.

    Args:
        memory: the `IntrinsicMemory` that updates this agent's memory.
        agent: the agent's name: its key in `intrinsic_memory`.
        token_budget: the most tokens of each model call's context, system prompt
            included; refused (ValueError, naming the minimum) if it cannot hold the system
            prompt, the task, the memory and the newest message.
        system_prompt: the agent's system prompt, given here instead of to `create_agent`
            so that the budget is checked against it now; the middleware puts it at the top
            of every model call. A system prompt given to `create_agent` counts as well, and
            a budget too small for it fails at the agent's first model call.
        task: the task description; None takes the conversation's first human message.
        role: the agent's role, shown to the memory update (default: the system prompt).
        token_counter: counts a list of messages (default: tiktoken estimate).

    The newest message, or a tool call with its results, is always in the context, so a
    tool-calling agent always sees what its tools answered.
    """

    state_schema = IntrinsicMemoryState

    def __init__(
        self,
        memory: IntrinsicMemory,
        *,
        agent: str,
        token_budget: int,
        system_prompt: str | None = None,
        task: str | None = None,
        role: str = "",
        token_counter: TokenCounter = count_message_tokens,
    ) -> None:
        super().__init__()
        if not isinstance(memory, IntrinsicMemory):
            raise TypeError(f"memory must be an IntrinsicMemory, not {type(memory).__name__}")
        if not agent or not isinstance(agent, str):
            raise ValueError("agent must name the agent: its key in intrinsic_memory")
        self.system = SystemMessage(system_prompt) if system_prompt else None
        self.count = token_counter
        check_budget(token_budget, memory.memory_tokens, task, self._tokens(self.system))
        self.memory = memory
        self.agent = agent
        self.token_budget = token_budget
        self.task = task
        self.role = role or system_prompt or ""

    def _tokens(self, system: SystemMessage | None) -> int:
        return self.count([system]) if system is not None else 0

    def _system(self, request: ModelRequest) -> SystemMessage | None:
        """The call's system prompt: the middleware's, else `create_agent`'s; one that
        leaves the budget no room for the rest is refused here, naming the minimum."""
        given = request.system_message
        if self.system is None:
            memory_tokens = self.memory.memory_tokens
            check_budget(self.token_budget, memory_tokens, self.task, self._tokens(given))
            return given
        if given is not None and given.text != self.system.text:
            raise ValueError(
                f"agent {self.agent!r} has two system prompts: give it to "
                "IntrinsicMemoryMiddleware(system_prompt=...) only, not to create_agent too"
            )
        return self.system

    @property
    def name(self) -> str:
        return f"IntrinsicMemory_{self.agent}"

    def _fitted(self, request: ModelRequest) -> ModelRequest:
        record = memory_of(request.state, self.agent)
        system = self._system(request)
        messages = fit_context(
            request.messages,
            record["text"] if record else "",
            token_budget=self.token_budget - self._tokens(system),
            task=self.task,
            token_counter=self.count,
        )
        return request.override(messages=messages, system_message=system)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        return handler(self._fitted(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        return await handler(self._fitted(request))

    def _step(self, state: IntrinsicMemoryState) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "output": own_output(state["messages"]),
            "role": self.role or f"You are {self.agent}.",
        }

    def after_agent(self, state: IntrinsicMemoryState, runtime: Runtime) -> dict[str, Any] | None:
        return memory_step(self.memory, state, **self._step(state))[0] or None

    async def aafter_agent(
        self, state: IntrinsicMemoryState, runtime: Runtime
    ) -> dict[str, Any] | None:
        return (await amemory_step(self.memory, state, **self._step(state)))[0] or None


def subagent_tool(agent: Any, *, name: str, description: str) -> BaseTool:
    """`agent` (a compiled `create_agent` with `IntrinsicMemoryMiddleware`) as a tool of a
    supervisor: each call passes the supervisor's `intrinsic_memory` in, runs the subagent
    on the request, and returns its answer with the memories it changed."""

    def _command(memories: dict[str, Any], result: dict[str, Any], call_id: str) -> Command:
        changed = {k: v for k, v in (result.get(MEMORY_KEY) or {}).items() if memories.get(k) != v}
        answer = result["messages"][-1].text
        message = ToolMessage(answer, tool_call_id=call_id, name=name)
        return Command(update={MEMORY_KEY: changed, "messages": [message]})

    def call(
        request: str,
        state: Annotated[dict, InjectedState],
        tool_call_id: Annotated[str, InjectedToolCallId],
    ) -> Command:
        memories = dict(state.get(MEMORY_KEY) or {})
        result = agent.invoke({"messages": [HumanMessage(request)], MEMORY_KEY: memories})
        return _command(memories, result, tool_call_id)

    async def acall(
        request: str,
        state: Annotated[dict, InjectedState],
        tool_call_id: Annotated[str, InjectedToolCallId],
    ) -> Command:
        memories = dict(state.get(MEMORY_KEY) or {})
        result = await agent.ainvoke({"messages": [HumanMessage(request)], MEMORY_KEY: memories})
        return _command(memories, result, tool_call_id)

    call.__doc__ = description
    return StructuredTool.from_function(
        func=call, coroutine=acall, name=name, description=description
    )
