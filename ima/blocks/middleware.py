"""Intrinsic memory for an agent made with `langchain.agents.create_agent`.

    agent = create_agent(model, tools, middleware=[IntrinsicMemoryMiddleware(memory, agent="researcher", budget=2048)])

Each model call of that agent sees its task, its own memory and the newest whole messages
that fit the budget (`fit_context`); the saved transcript is unchanged. After the agent's
turn its memory is updated from its own output into `intrinsic_memory[agent]`.

A supervisor whose subagents are tools: give each subagent the middleware and hand it to
the supervisor as `subagent_tool(subagent, name=..., description=...)`; the supervisor's
`create_agent(..., state_schema=IntrinsicMemoryState)` then keeps every subagent's memory
between calls, and parallel calls keep both updates.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from langchain.agents.middleware.types import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.prebuilt import InjectedState
from langgraph.runtime import Runtime
from langgraph.types import Command

from ima.blocks.state import (
    MEMORY_KEY,
    IntrinsicMemoryState,
    memory_of,
    next_version,
    own_output,
)
from ima.method.context import TokenCounter, count_message_tokens, fit_context
from ima.method.memory_update import IntrinsicMemory


class IntrinsicMemoryMiddleware(AgentMiddleware[IntrinsicMemoryState, Any]):
    """Gives one `create_agent` agent intrinsic memory.

    Args:
        memory: the `IntrinsicMemory` that updates this agent's memory.
        agent: the agent's name: its key in `intrinsic_memory`.
        budget: the most tokens of each model call's context (system prompt included).
        task: the task description; None takes the conversation's first message.
        role: the agent's role, shown to the memory update (e.g. its system prompt).
        token_counter: counts a list of messages (default: tiktoken estimate).
    """

    state_schema = IntrinsicMemoryState

    def __init__(
        self,
        memory: IntrinsicMemory,
        *,
        agent: str,
        budget: int,
        task: str | None = None,
        role: str = "",
        token_counter: TokenCounter = count_message_tokens,
    ) -> None:
        super().__init__()
        self.memory = memory
        self.agent = agent
        self.budget = budget
        self.task = task
        self.role = role
        self.count = token_counter

    @property
    def name(self) -> str:
        return f"IntrinsicMemory_{self.agent}"

    def _fitted(self, request: ModelRequest) -> ModelRequest:
        record = memory_of(request.state, self.agent)
        system = [request.system_message] if request.system_message else []
        messages = fit_context(
            request.messages,
            record["text"] if record else "",
            budget=self.budget - (self.count(system) if system else 0),
            task=self.task,
            token_counter=self.count,
        )
        return request.override(messages=messages)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        return handler(self._fitted(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        return await handler(self._fitted(request))

    def _role(self) -> str:
        return self.role or f"You are {self.agent}."

    def after_agent(self, state: IntrinsicMemoryState, runtime: Runtime) -> dict[str, Any] | None:
        output = own_output(state["messages"])
        if not output:
            return None
        record = memory_of(state, self.agent)
        result = self.memory.update(
            record["text"] if record else "", output, role=self._role(), metadata=self._meta()
        )
        return {MEMORY_KEY: {self.agent: next_version(record, result.text)}}

    async def aafter_agent(
        self, state: IntrinsicMemoryState, runtime: Runtime
    ) -> dict[str, Any] | None:
        output = own_output(state["messages"])
        if not output:
            return None
        record = memory_of(state, self.agent)
        result = await self.memory.aupdate(
            record["text"] if record else "", output, role=self._role(), metadata=self._meta()
        )
        return {MEMORY_KEY: {self.agent: next_version(record, result.text)}}

    def _meta(self) -> dict[str, Any]:
        return {"ima_role": self.agent}


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
