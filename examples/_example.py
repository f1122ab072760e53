"""What the examples share, not an example itself: their command line (a model as
`ima run --model` takes it, the tokens each agent sees), sending requests one by one, and
printing each agent's memory; `run_requests` is the whole `main` of the examples that answer
a list of requests on one thread."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langgraph.errors import GraphRecursionError


def parser(doc: str, budget: str) -> argparse.ArgumentParser:
    """The example's command line: its docstring's first paragraph, --model and --budget."""
    made = argparse.ArgumentParser(
        description=doc.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    made.add_argument(
        "--model",
        default="embedded",
        help="what `ima run --model` takes: embedded (offline, the default), scripted "
        "(deterministic test model), ollama:NAME, or a LangChain provider:model",
    )
    made.add_argument("--budget", type=int, default=1024, help=budget)
    return made


def chat_model(name: str) -> BaseChatModel:
    from ima.models import load_chat_model  # the app's models: embedded, scripted, Ollama

    return load_chat_model(name)


def ask_each(graph: Any, requests: Sequence[str], config: dict[str, Any]) -> None:
    """Send each request in turn on one thread; print it and the answer."""
    for request in requests:
        try:
            result = graph.invoke({"messages": [HumanMessage(request)]}, config)
        except GraphRecursionError:  # a small model can keep handing work around
            print(f"> {request}\n(no answer within {config['recursion_limit']} steps)\n")
            continue
        print(f"> {request}\n{result['messages'][-1].text}\n")


def print_memories(values: Mapping[str, Any]) -> None:
    for agent, record in (values.get("intrinsic_memory") or {}).items():
        print(f"{agent}'s memory (version {record['version']}):\n{record['text']}\n")


def run_requests(
    doc: str,
    budget: str,
    build: Callable[[BaseChatModel, int], Any],
    requests: Sequence[str],
    thread_id: str,
    recursion_limit: int,
) -> None:
    """Parse the command line (plus --requests), build the graph, send the requests on one
    thread, then print each agent's memory."""
    made = parser(doc, budget)
    made.add_argument(
        "--requests", type=int, default=len(requests), help="how many of the requests to send"
    )
    args = made.parse_args()
    graph = build(chat_model(args.model), args.budget)
    config = {"configurable": {"thread_id": thread_id}, "recursion_limit": recursion_limit}
    ask_each(graph, requests[: args.requests], config)
    print_memories(graph.get_state(config).values)
