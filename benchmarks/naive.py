"""The naive reference graph: the real graph, with every DeltaChannel swapped for a plain
LangGraph reducer (a BinaryOperatorAggregate), so each checkpoint stores the whole value.

The transcript becomes `Annotated[list[Turn], operator.add]`; every other delta-backed key
keeps its own reducer, applied to one update at a time. Nodes, edges and prompts are the
real ones: `ima.meeting.builder.compile_graph` (and `create_meeting` under it) runs unchanged,
with its state classes swapped.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import (
    Annotated,
    Any,
    NotRequired,
    Required,
    TypedDict,
    get_args,
    get_origin,
    get_type_hints,
)
from unittest import mock

from langgraph.channels.delta import DeltaChannel
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph

from ima.core.state import InputState, State
from ima.meeting import builder
from ima.tasks import Task


@cache  # one wrapper per reducer: a key shared by two schemas must get the same channel
def _one_at_a_time(reducer: Callable[[Any, list[Any]], Any]) -> Callable[[Any, Any], Any]:
    def binary(current: Any, update: Any) -> Any:
        return reducer(current, [update])

    return binary


def plain_schema(schema: type, name: str) -> type:
    """`schema` with each DeltaChannel annotation replaced by a plain binary reducer."""
    fields: dict[str, Any] = {}
    for key, hint in get_type_hints(schema, include_extras=True).items():
        optional = key in schema.__optional_keys__  # type: ignore[attr-defined]
        while get_origin(hint) in (NotRequired, Required):
            hint = get_args(hint)[0]
        if get_origin(hint) is Annotated:
            base, *extras = get_args(hint)
            delta = next((e for e in extras if isinstance(e, DeltaChannel)), None)
            if delta is not None:
                reducer = operator.add if key == "transcript" else _one_at_a_time(delta.reducer)
                hint = Annotated[base, reducer]
        fields[key] = NotRequired[hint] if optional else hint
    return TypedDict(name, fields)  # type: ignore[operator]


NaiveInputState = plain_schema(InputState, "NaiveInputState")
NaiveState = plain_schema(State, "NaiveState")


def delta_keys(schema: type = State) -> list[str]:
    """The state keys stored as DeltaChannels in the real graph."""
    keys = []
    for key, hint in get_type_hints(schema, include_extras=True).items():
        while get_origin(hint) in (NotRequired, Required):
            hint = get_args(hint)[0]
        if get_origin(hint) is Annotated and any(
            isinstance(e, DeltaChannel) for e in get_args(hint)[1:]
        ):
            keys.append(key)
    return keys


class _NaiveStateGraph(StateGraph):
    """Node functions are annotated with the real `State`; read them as the naive state."""

    def add_node(self, node: Any, action: Any = None, **kwargs: Any) -> Any:
        kwargs.setdefault("input_schema", NaiveState)
        return super().add_node(node, action, **kwargs)

    def add_conditional_edges(self, source: str, path: Any, path_map: Any = None) -> Any:
        def unannotated(state: Any) -> Any:
            return path(state)

        return super().add_conditional_edges(source, unannotated, path_map)


@contextmanager
def _naive_builder() -> Iterator[None]:
    with (
        mock.patch.object(builder, "State", NaiveState),
        mock.patch.object(builder, "InputState", NaiveInputState),
        mock.patch.object(builder, "StateGraph", _NaiveStateGraph),
    ):
        yield


def compile_naive_graph(
    task: Task, memory_mode: str = "intrinsic", **kwargs: Any
) -> CompiledStateGraph:
    """The real graph factory, run with plain reducers instead of DeltaChannels."""
    with _naive_builder():
        return builder.compile_graph(task, memory_mode, **kwargs)  # type: ignore[arg-type]
