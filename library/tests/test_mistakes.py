"""A user's first mistakes fail at construction with one clear line, or cannot happen."""

from __future__ import annotations

import json
import logging
from typing import Annotated, Any

import pytest
from conftest import Recorder
from intrinsic_memory import (
    IntrinsicMemory,
    IntrinsicMemoryMiddleware,
    MemoryChannel,
    add_intrinsic_memory,
    count_message_tokens,
    fit_context,
)
from intrinsic_memory.state import AgentMemory
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.graph import StateGraph
from langgraph.graph.message import add_messages
from pydantic import Field
from typing_extensions import TypedDict


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    intrinsic_memory: MemoryChannel


class NoMemoryKey(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def node(state: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [AIMessage("ok")]}


@pytest.mark.parametrize("budget", [40, 200])
def test_a_budget_that_cannot_hold_the_memory_and_a_message_is_refused(budget):
    memory = IntrinsicMemory(Recorder(), memory_tokens=192)
    with pytest.raises(ValueError, match=r"token_budget=\d+ cannot hold the memory \(192 tokens\)"):
        IntrinsicMemoryMiddleware(memory, agent="calc", token_budget=budget)
    with pytest.raises(ValueError, match=r"give token_budget=(\d+) or more"):
        add_intrinsic_memory(StateGraph(State), "agent", node, memory, token_budget=budget)


def test_the_minimum_named_is_enough():
    memory = IntrinsicMemory(Recorder(), memory_tokens=192)
    with pytest.raises(ValueError) as refused:
        IntrinsicMemoryMiddleware(memory, agent="calc", token_budget=40, task="Add numbers.")
    least = int(str(refused.value).rsplit("token_budget=", 1)[1].split()[0])
    IntrinsicMemoryMiddleware(memory, agent="calc", token_budget=least, task="Add numbers.")


@pytest.mark.parametrize(
    ("template", "error"),
    [
        (None, "unknown memory template NoneType: use 'generic', a MemoryTemplate, or Markdown"),
        ("generics", "unknown memory template 'generics': use 'generic'"),
        ("keep what matters", "unknown memory template 'keep what matters'"),
    ],
)
def test_a_bad_template_is_refused_with_the_choices(template, error):
    with pytest.raises(ValueError, match=error):
        IntrinsicMemory(Recorder(), template)


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"mode": "append"}, "unknown memory update mode 'append': use edit or rewrite"),
        ({"memory_tokens": 8}, "memory_tokens=8 is too small: give 32 or more"),
        ({"max_edits": 0}, "max_edits=0: give 1 or more"),
    ],
)
def test_bad_settings_are_refused(options, error):
    with pytest.raises(ValueError, match=error):
        IntrinsicMemory(Recorder(), **options)


def test_a_model_string_is_loaded_at_construction_or_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^cannot load model 'nosuchprovider:model': ") as bad:
        IntrinsicMemory("nosuchprovider:model")
    assert "\n" not in str(bad.value)
    with pytest.raises(TypeError, match="a LangChain chat model or a 'provider:model' string"):
        IntrinsicMemory(42)  # type: ignore[arg-type]


def test_a_graph_without_a_memory_key_is_refused_with_the_fix():
    memory = IntrinsicMemory(Recorder())
    with pytest.raises(ValueError, match="no 'intrinsic_memory' key: add `intrinsic_memory"):
        add_intrinsic_memory(StateGraph(NoMemoryKey), "a", node, memory, token_budget=2048)
    with pytest.raises(ValueError, match="no 'chat' key: give the key of its messages"):
        add_intrinsic_memory(
            StateGraph(State), "a", node, memory, token_budget=2048, messages_key="chat"
        )
    with pytest.raises(ValueError, match="no 'usage' key: add `usage: UsageChannel` to it"):
        add_intrinsic_memory(
            StateGraph(State), "a", node, memory, token_budget=2048, usage_key="usage"
        )
    with pytest.raises(TypeError, match="memory must be an IntrinsicMemory"):
        add_intrinsic_memory(StateGraph(State), "a", node, "generic", token_budget=2048)  # type: ignore[arg-type]


class UsageReplaced(State):
    usage: dict  # no reducer: each update would replace the last


def test_a_usage_key_that_would_not_sum_is_refused_with_the_fix():
    memory = IntrinsicMemory(Recorder())
    with pytest.raises(
        ValueError,
        match=r"'usage' keeps only the latest update, so usage would not be summed: declare it `usage: UsageChannel`$",
    ):
        add_intrinsic_memory(
            StateGraph(UsageReplaced), "a", node, memory, token_budget=2048, usage_key="usage"
        )


@pytest.mark.parametrize(
    ("budget", "shown"), [("2048", "str '2048'"), (2048.0, "float 2048.0"), (True, "bool True")]
)
def test_a_number_that_is_not_an_int_is_refused_as_the_wrong_type(budget, shown):
    memory = IntrinsicMemory(Recorder(), memory_tokens=64)
    wrong = f"^token_budget must be an int, not {shown}$"
    with pytest.raises(TypeError, match=wrong):
        add_intrinsic_memory(StateGraph(State), "agent", node, memory, token_budget=budget)
    with pytest.raises(TypeError, match=wrong):
        IntrinsicMemoryMiddleware(memory, agent="calc", token_budget=budget)
    with pytest.raises(TypeError, match=wrong):
        fit_context([AIMessage("hi")], "", token_budget=budget)
    with pytest.raises(TypeError, match=f"^memory_tokens must be an int, not {shown}$"):
        IntrinsicMemory(Recorder(), memory_tokens=budget)
    with pytest.raises(TypeError, match=f"^max_edits must be an int, not {shown}$"):
        IntrinsicMemory(Recorder(), max_edits=budget)


# A system prompt of 231 tokens: with a 32-token memory, token_budget=160 cannot hold it.
SYSTEM = "You are a careful planner of data pipelines. " * 25 + "Plan."


def test_the_middleware_counts_its_system_prompt_and_refuses_a_budget_that_cannot_hold_it():
    assert count_message_tokens([SystemMessage(SYSTEM)]) == 231
    model = Recorder()
    memory = IntrinsicMemory(model, memory_tokens=32)
    with pytest.raises(ValueError) as refused:
        IntrinsicMemoryMiddleware(memory, agent="planner", token_budget=160, system_prompt=SYSTEM)
    message = str(refused.value)
    assert message.startswith(
        "token_budget=160 cannot hold the system prompt (231 tokens), the memory (32 tokens)"
    )
    least = int(message.rsplit("token_budget=", 1)[1].split()[0])
    middleware = IntrinsicMemoryMiddleware(
        memory, agent="planner", token_budget=least, system_prompt=SYSTEM
    )
    agent = create_agent(model, middleware=[middleware])
    state = {"messages": [HumanMessage("Plan the ingestion.")]}
    for question in ("Which store?", "Which format?", "Which schedule?"):
        state = agent.invoke({"messages": [*state["messages"], HumanMessage(question)]})
    calls = model.agent_calls()
    assert len(calls) == 3 and all(call[0].text == SYSTEM for call in calls)
    assert all(count_message_tokens(call) <= least for call in calls)  # the budget holds


def test_a_system_prompt_given_to_create_agent_counts_too_and_fails_before_any_call():
    model = Recorder()
    memory = IntrinsicMemory(model, memory_tokens=32)
    middleware = IntrinsicMemoryMiddleware(memory, agent="planner", token_budget=160)
    agent = create_agent(model, system_prompt=SYSTEM, middleware=[middleware])
    with pytest.raises(ValueError) as refused:
        agent.invoke({"messages": [HumanMessage("Plan the ingestion.")]})
    assert str(refused.value).splitlines()[0] == (  # LangGraph adds the node's name below
        "token_budget=160 cannot hold the system prompt (231 tokens), the memory (32 tokens) "
        "and the newest message: give token_budget=348 or more"
    )
    assert model.calls == []  # no model call was made over the budget


def test_a_system_prompt_given_twice_is_refused():
    model = Recorder()
    memory = IntrinsicMemory(model, memory_tokens=32)
    middleware = IntrinsicMemoryMiddleware(
        memory, agent="planner", token_budget=1000, system_prompt="You plan."
    )
    agent = create_agent(model, system_prompt="You are a planner.", middleware=[middleware])
    with pytest.raises(
        ValueError, match="'planner' has two system prompts: give it to IntrinsicMemoryMiddleware"
    ):
        agent.invoke({"messages": [HumanMessage("Plan the ingestion.")]})


def reply(text: str) -> AIMessage:
    usage = {"input_tokens": 50, "output_tokens": 3, "total_tokens": 53}
    return AIMessage(text, usage_metadata=usage)


@pytest.mark.parametrize("answer", ["", "Sure, I will remember that."])
def test_an_empty_or_unusable_answer_keeps_the_memory_and_its_version_and_is_counted(
    answer, caplog
):
    from intrinsic_memory.nodes import memory_step

    model = FakeMessagesListChatModel(responses=[reply(answer)])
    memory = IntrinsicMemory(model, "## Decisions\n- <decision>", mode="edit")
    record = AgentMemory(text="## Decisions\n- use S3", version=4)
    state = {"intrinsic_memory": {"dea": record}, "usage": {}}
    with caplog.at_level(logging.WARNING, logger="intrinsic_memory"):
        update, result = memory_step(
            memory,
            state,
            agent="dea",
            output="We agreed to keep raw sensor uploads for 30 days in object storage.",
            usage_key="usage",
        )
    assert update["intrinsic_memory"]["dea"] == {"text": "## Decisions\n- use S3", "version": 4}
    assert result is not None and not result.changed and result.repairs.unusable
    assert update["usage"]["dea"]["memory_update"]["calls"] == 1  # the call still counts
    assert "memory update unusable" in caplog.text


class ToolCaller(BaseChatModel):
    """A provider whose structured output is tool calling, that needs a titled schema."""

    bound: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "tool-caller"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        from langchain_core.utils.function_calling import convert_to_openai_tool

        self.bound.extend(convert_to_openai_tool(t) for t in tools)  # refuses an untitled one
        return self.bind(**{k: v for k, v in kwargs.items() if k == "tool_choice"})

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        name = self.bound[-1]["function"]["name"]
        args = {"notes": [{"section": "decisions", "note": "use S3 for raw data"}]}
        call = {"name": name, "args": args, "id": "call_1"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


def test_a_tool_calling_provider_answers_memory_updates_through_its_tools(caplog):
    model = ToolCaller()
    memory = IntrinsicMemory(model, "## Decisions\n- <decision>", mode="rewrite")
    with caplog.at_level(logging.WARNING, logger="intrinsic_memory"):
        result = memory.update("", "We agreed on S3.")
    assert result.text == "## Decisions\n- use S3 for raw data"
    assert model.bound[-1]["function"]["name"] == "memory"
    assert caplog.text == ""


def test_a_model_without_json_or_tools_falls_back_to_text_and_says_so(caplog, monkeypatch):
    from intrinsic_memory import models

    monkeypatch.setattr(models, "_warned", set())  # said once per model class and process
    answer = json.dumps({"notes": [{"section": "decisions", "note": "use S3"}]})
    model = FakeMessagesListChatModel(responses=[reply(answer)])
    memory = IntrinsicMemory(model, "## Decisions\n- <decision>", mode="rewrite")
    with caplog.at_level(logging.WARNING, logger="intrinsic_memory"):
        result = memory.update("", "We agreed on S3.")
    assert result.text == "## Decisions\n- use S3"
    assert "no JSON Schema mode or tool calling" in caplog.text


def test_the_task_is_explicit_or_the_first_human_message():
    from langchain_core.messages import HumanMessage

    messages = [HumanMessage("first question"), AIMessage("answer"), HumanMessage("second")]
    default = fit_context(messages, "", token_budget=1000)
    assert [m.text for m in default][:1] == ["first question"]
    given = fit_context(messages, "", token_budget=1000, task="Help with the pipeline.")
    assert given[0].text == "Help with the pipeline." and given[-1].text == "second"
    assert [m.text for m in given].count("first question") == 1  # history keeps it, once
