"""A research team built with langgraph-supervisor's `create_supervisor`: a supervisor hands
work to a researcher and a writer in turn; each worker keeps its own intrinsic memory
(lines marked `# + intrinsic memory`).

    python examples/research_team.py [--model embedded] [--budget 1024]

Every worker reads the whole team conversation, which grows with every request. With
intrinsic memory each sees the first request, its own notes and only the newest messages
that fit the budget; its notes are updated from its own answers and live in the team's
state under `intrinsic_memory`, checkpointed with the thread. `--model` takes what
`ima run --model` takes (the embedded default runs offline; langgraph-supervisor is
installed with the app's dev extras).
"""

from __future__ import annotations

import _example as example  # the examples' command line and printing
from intrinsic_memory import IntrinsicMemory, IntrinsicMemoryMiddleware, MemoryChannel
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt.chat_agent_executor import AgentState
from langgraph_supervisor import create_supervisor

RESEARCHER = "You are the researcher. Find the facts the team needs: figures, sources, limits."
WRITER = "You are the writer. Turn the researcher's facts into a short, clear answer."
SUPERVISOR = (
    "You lead a research team. Send each request to `researcher` first, then to `writer`, "
    "then give the user the writer's answer."
)
REQUESTS = [
    "How much storage does a fleet of 200 cars recording 50 GB per hour need per day?",
    "What if each car only uploads 60 GB per day over depot Wi-Fi?",
    "Summarise both answers for the budget meeting.",
]


class TeamState(AgentState):  # the state create_supervisor's own agent needs
    intrinsic_memory: MemoryChannel  # + intrinsic memory: the workers' memories


def build(model: BaseChatModel, token_budget: int = 1024):
    """The team: a supervisor and two workers, with a checkpointer so the thread persists."""
    memory = IntrinsicMemory(model, memory_tokens=192)  # + intrinsic memory

    def worker(name: str, role: str):
        remember = IntrinsicMemoryMiddleware(  # + intrinsic memory
            memory, agent=name, token_budget=token_budget, role=role
        )
        return create_agent(model, system_prompt=role, middleware=[remember], name=name)

    team = create_supervisor(
        [worker("researcher", RESEARCHER), worker("writer", WRITER)],
        model=model,
        prompt=SUPERVISOR,
        state_schema=TeamState,
    )
    return team.compile(checkpointer=InMemorySaver())


def main() -> None:
    example.run_requests(
        __doc__, "tokens each worker sees", build, REQUESTS, "research", recursion_limit=16
    )


if __name__ == "__main__":
    main()
