"""The graphs behind `langgraph dev`: a real server, offline, driven through langgraph_sdk.

One server (module fixture) runs in a temporary working directory on a free port, with the
scripted model. The tests stream a run, answer the review interrupt, read the final state
and the checkpoint history, fork from an earlier checkpoint, continue a cancelled run,
compare the server's graph view with `ima graph`, pick another task through an assistant,
and run examples/sdk_client.py against the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from langgraph_sdk import get_client

from ima.meeting.builder import compile_graph
from ima.meeting.design.document import Design
from ima.meeting.nodes.memory_update import memory_node_name
from ima.tasks import Task, load_task

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "sdk_client.py"
SCRIPTED = {"model": "scripted"}
DEV_FLAGS = ["--no-browser", "--no-reload"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env() -> dict[str, str]:
    """This environment without ima or LangSmith settings, plus the offline flags."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IMA_", "LANGSMITH_"))}
    return env | {
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGSMITH_TRACING": "false",
        "IMA_MODEL": "scripted",
    }


def wait_for_server(proc: subprocess.Popen[bytes], log: Path, port: int) -> str:
    """The API URL the server printed, once the server answers /ok."""
    deadline = time.monotonic() + 90
    url = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"langgraph dev exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        if url is None:
            found = re.search(r"API: (http://\S+)", ANSI.sub("", log.read_text(errors="replace")))
            url = found and found.group(1).rstrip("/")
        if url:
            assert url == f"http://127.0.0.1:{port}", url
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    return url
            except httpx.HTTPError:
                pass
        time.sleep(0.2)
    pytest.fail(f"langgraph dev did not answer within 90 s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`langgraph dev` on a free port in a temporary directory (its .langgraph_api/ goes there)."""
    langgraph = shutil.which("langgraph", path=str(Path(sys.executable).parent))
    if langgraph is None:
        pytest.fail("langgraph dev is missing: pip install 'langgraph-cli[inmem]'")
    workdir = tmp_path_factory.mktemp("langgraph-dev")
    shutil.copy(REPO / "langgraph.json", workdir)
    port = free_port()
    log = workdir / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [langgraph, "dev", "--host", "127.0.0.1", "--port", str(port), *DEV_FLAGS],
            cwd=workdir,
            env=server_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped with everything it spawned
        )
    try:
        yield wait_for_server(proc, log, port)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def stream_run(client: Any, thread_id: str, assistant: str, **kwargs: Any) -> dict:
    """Stream one run (updates and custom events) and collect what came out."""
    updates: list[tuple[str, Any]] = []
    custom: list[dict] = []
    async for part in client.runs.stream(
        thread_id, assistant, stream_mode=["updates", "custom"], **kwargs
    ):
        assert part.event != "error", part.data
        if part.event == "updates":
            updates += list(part.data.items())
        elif part.event == "custom":
            custom.append(part.data)
    return {"updates": updates, "custom": custom}


async def system_assistant(client: Any, graph_id: str) -> str:
    """The assistant the server made for a graph of langgraph.json (not one a test made)."""
    found = await client.assistants.search(graph_id=graph_id, metadata={"created_by": "system"})
    assert len(found) == 1, found
    return found[0]["assistant_id"]


def node_ids(graph_json: dict) -> set[str]:
    return {n["id"] for n in graph_json["nodes"]}


def edges(graph_json: dict) -> set[tuple[str, str, bool]]:
    return {(e["source"], e["target"], bool(e.get("conditional"))) for e in graph_json["edges"]}


def test_streamed_run_review_resume_history_and_fork(server: str, task: Task) -> None:
    async def scenario() -> None:
        client = get_client(url=server)
        thread_id = (await client.threads.create())["thread_id"]
        context = SCRIPTED | {"review": True}

        # 1. Stream a run: every agent turn and memory update is a step of its own.
        first = await stream_run(client, thread_id, "intrinsic", input={}, context=context)
        nodes = Counter(name for name, _ in first["updates"])
        for role in task.speakers:
            assert nodes[role] >= 2 and nodes[memory_node_name(role)] == nodes[role], role
        turns = [u for name, u in first["updates"] if name in task.speakers]
        assert all(len(u["transcript"]) == 1 for u in turns)
        memory_updates = [(n, u) for n, u in first["updates"] if n.endswith("_memory")]
        for name, update in memory_updates:  # each updater writes its own agent's slot only
            assert list(update["intrinsic_memory"]) == [name.removesuffix("_memory")]
        events = Counter(e["event"] for e in first["custom"])
        assert events["turn"] == len(turns) and events["memory"] == len(memory_updates)
        assert {e["speaker"] for e in first["custom"] if e["event"] == "turn"} == set(task.speakers)

        # 2. The run stops before FINALIZE with the review question.
        interrupt = first["updates"][-1]
        assert interrupt[0] == "__interrupt__"
        state = await client.threads.get_state(thread_id)
        assert state["next"] == ["human_review"]
        review = state["interrupts"][0]["value"]
        assert set(review["votes"].values()) == {"ACCEPT"} and review["question"]
        assert state["values"]["status"] == "running"
        assert not any("FINALIZE" in t["flags"] for t in state["values"]["transcript"])

        # 3. Approve: the facilitator announces FINALIZE and the documentation step runs.
        second = await stream_run(
            client, thread_id, "intrinsic", command={"resume": {"approve": True}}, context=context
        )
        names = [name for name, _ in second["updates"]]
        assert names[0] == "human_review" and names[-2:] == ["documentation", "learn"]
        final = await client.threads.get_state(thread_id)
        values = final["values"]
        assert final["next"] == [] and values["status"] == "finalized"
        assert "FINALIZE" in values["transcript"][-1]["flags"]
        assert values["final"]["markdown"].startswith("# ")
        Design.model_validate(values["final"]["spec"])
        # every memory version comes from an update in the log (an update that changed
        # nothing keeps the version); a turn that was no news made none
        spoke = Counter(name for name, _ in first["updates"] + second["updates"])
        updated = Counter(e["role"] for e in values["memory_log"] if e["turn"])  # not the template
        for role, slot in values["intrinsic_memory"].items():
            assert 1 <= slot["version"] <= updated[role] <= spoke[role], role

        # 4. The checkpoint history: every step, with the memory slots as they grew.
        history = await client.threads.get_history(thread_id, limit=1000)
        steps = [n for n, _ in first["updates"] + second["updates"] if n != "__interrupt__"]
        assert len(history) == len(steps) + 2  # + the input and its __start__ step
        assert history[0]["checkpoint"]["checkpoint_id"] == final["checkpoint"]["checkpoint_id"]
        versions = [
            sum(slot["version"] for slot in h["values"].get("intrinsic_memory", {}).values())
            for h in history
        ]
        assert versions == sorted(versions, reverse=True)  # newest first, memories only grow
        assert versions[0] == sum(s["version"] for s in values["intrinsic_memory"].values())
        assert versions[-1] == 0

        # 5. Fork: re-run from the last checkpoint with 10 turns (after turn 10, its memory
        #    update and the router's pick of the next speaker), sampling with another seed. Turns 1-10
        #    are shared; the fork's turns differ from there.
        original = values["transcript"]
        after_10 = next(h for h in history if len(h["values"]["transcript"]) == 10)
        assert after_10["next"] == [original[10]["speaker"]]
        fork = await stream_run(
            client,
            thread_id,
            "intrinsic",
            input=None,
            checkpoint_id=after_10["checkpoint_id"],
            context=SCRIPTED | {"seed": 7, "temperature": 0.7},  # sampled: the seed matters
        )
        assert fork["updates"][0][0] == original[10]["speaker"]
        assert (fork["custom"][0]["event"], fork["custom"][0]["turn"]) == ("turn", 11)
        forked = (await client.threads.get_state(thread_id))["values"]
        assert forked["status"] == "finalized"
        assert forked["transcript"][:10] == original[:10]
        assert forked["transcript"][10]["content"] != original[10]["content"]
        # Both branches stay in the thread: the original end is still readable.
        kept = await client.threads.get_state(
            thread_id, checkpoint_id=final["checkpoint"]["checkpoint_id"]
        )
        assert kept["values"]["transcript"] == original

    run(scenario())


def test_cancelled_run_continues_from_its_last_checkpoint(server: str, task: Task) -> None:
    async def scenario() -> None:
        client = get_client(url=server)
        thread_id = (await client.threads.create())["thread_id"]
        slow = {"model": "scripted:delay=0.1"}
        started = await client.runs.create(thread_id, "baseline", input={}, context=slow)
        for _ in range(100):  # until a few turns are in
            await asyncio.sleep(0.1)
            state = await client.threads.get_state(thread_id)
            if len(state["values"].get("transcript", [])) >= 3:
                break
        await client.runs.cancel(thread_id, started["run_id"], wait=True)
        stopped = await client.threads.get_state(thread_id)
        done = stopped["values"]["transcript"]
        assert len(done) >= 3 and stopped["next"]
        assert (await client.runs.get(thread_id, started["run_id"]))["status"] == "interrupted"

        out = await client.runs.wait(thread_id, "baseline", input=None, context=SCRIPTED)
        assert out["status"] == "finalized"
        assert out["transcript"][: len(done)] == done
        assert [t["index"] for t in out["transcript"]] == list(range(1, len(out["transcript"]) + 1))

    run(scenario())


@pytest.mark.parametrize(
    "graph_id, memory_mode", [("intrinsic", "intrinsic"), ("baseline", "none")]
)
def test_graph_view_matches_ima_graph(server: str, task: Task, cli, graph_id, memory_mode) -> None:
    async def view() -> dict:
        client = get_client(url=server)
        return await client.assistants.get_graph(await system_assistant(client, graph_id))

    served = run(view())
    local = compile_graph(task, memory_mode).get_graph().to_json()
    assert node_ids(served) == node_ids(local)
    assert edges(served) == edges(local)
    expected = {"router", "documentation", *task.speakers}
    if memory_mode == "intrinsic":
        expected |= {memory_node_name(r) for r in task.speakers}
    assert expected <= node_ids(served)
    if memory_mode == "none":
        assert not [n for n in node_ids(served) if n.endswith("_memory")]

    code, mermaid, _ = cli("graph", "--memory", memory_mode)
    assert code == 0
    assert node_ids(served) == set(re.findall(r"^\s+(\w+)\(", mermaid, flags=re.MULTILINE))


def test_studio_forms(server: str) -> None:
    """Studio renders the context schema as editable fields and the input schema as a form."""

    async def schemas() -> dict:
        client = get_client(url=server)
        return await client.assistants.get_schemas(await system_assistant(client, "intrinsic"))

    found = run(schemas())
    fields = found["context_schema"]["properties"]
    for name in ("task", "model", "template", "token_budget", "turn_cap", "seed", "review"):
        assert fields[name]["description"], name
    assert fields["template"]["enum"] == ["generic", "manual", "llm"]
    assert found["input_schema"] is not None, (
        "no input schema: pydantic on Python < 3.12 needs typing_extensions.TypedDict in "
        "ima/meeting/state.py"
    )
    assert set(found["input_schema"]["properties"]) == {"brief"}
    assert not found["input_schema"].get("required")


def small_task(tmp_path: Path) -> Path:
    """The data-pipeline task cut down to two workers and a reviewer named REV (a role the
    data-pipeline graph does not have)."""
    data = yaml.safe_load((REPO / "ima/tasks/data_pipeline.yaml").read_text())
    data["id"] = "small-pipeline"
    data["schedule"]["workers"] = ["BOA", "DEA"]
    data["schedule"]["after_round"] = ["REV"]
    keep = {"CDA", "BOA", "DEA", "ERA", "DJE"}
    data["roles"] = [
        r | {"id": "REV"} if r["id"] == "ERA" else r for r in data["roles"] if r["id"] in keep
    ]
    for component in data["design"]["components"]:  # owned by roles of the task
        if component["owner"] not in keep - {"ERA"}:
            component["owner"] = "BOA" if component["owner"] == "IA" else "DEA"
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_task_is_chosen_on_an_assistant(server: str, tmp_path: Path) -> None:
    path = small_task(tmp_path)
    small = load_task(str(path))

    async def scenario() -> None:
        client = get_client(url=server)
        assistant = await client.assistants.create(
            "intrinsic",
            # DEA, owning five components, is asked about each: the default budget is short
            context=SCRIPTED | {"task": str(path), "token_budget": 2304},
            name="small pipeline",
        )
        served = await client.assistants.get_graph(assistant["assistant_id"])
        assert node_ids(served) == node_ids(compile_graph(small).get_graph().to_json())
        thread_id = (await client.threads.create())["thread_id"]
        out = await client.runs.wait(thread_id, assistant["assistant_id"], input={})
        assert out["task_id"] == "small-pipeline" and out["status"] == "finalized"
        assert {t["speaker"] for t in out["transcript"]} == set(small.speakers)
        # Reading the thread builds the assistant's graph too: every step but the last has a
        # next node of the small graph (REV's steps would have none in the data-pipeline one).
        history = await client.threads.get_history(thread_id, limit=1000)
        assert history[0]["next"] == [] and history[0]["values"]["status"] == "finalized"
        assert all(h["next"] for h in history[1:])
        assert {n for h in history for n in h["next"]} >= {"REV", "REV_memory"}

        bad = (await client.threads.create())["thread_id"]
        parts = [
            p
            async for p in client.runs.stream(
                bad, "intrinsic", input={}, context=SCRIPTED | {"task": "no-such-task"}
            )
        ]
        errors = [p.data for p in parts if p.event == "error"]
        assert errors and "unknown task 'no-such-task'" in errors[0]["message"]

    run(scenario())


def run_example(server: str, *args: str, answers: str = "") -> str:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), server, *args],
        input=answers,
        capture_output=True,
        text=True,
        timeout=120,
        env=server_env(),
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_sdk_example(server: str) -> None:
    out = run_example(server, "--approve")
    assert re.search(r"^turn +1 +CDA +discussion$", out, flags=re.MULTILINE)
    assert re.search(r"^ +CDA memory v1: \+\d+ -0 lines$", out, flags=re.MULTILINE)
    assert out.count("votes: {") == 1
    assert re.search(r"^turn +\d+ +CDA +consensus +.*FINALIZE$", out, flags=re.MULTILINE)
    assert "status finalized after" in out and "## Summary" in out
    assert '"components": [' in out  # design.json


def test_sdk_example_sends_feedback_then_approves(server: str) -> None:
    out = run_example(server, answers="Tier cold data to cut storage cost\n\n")
    assert out.count("votes: {") == 2  # the team went back to proposals and voted again
    assert "status finalized after" in out


def test_docs_show_the_tested_example() -> None:
    """The README section shows examples/sdk_client.py as it is, so its example is tested."""
    example = EXAMPLE.read_text().strip()
    docs = [REPO / "README.md", REPO / "docs" / "studio.md"]
    showing = [d for d in docs if d.exists() and "examples/sdk_client.py" in d.read_text()]
    assert showing, "README.md should show examples/sdk_client.py"
    for doc in showing:
        assert example in doc.read_text(), f"{doc.name} shows an old copy of the example"


def test_a_server_run_learns_long_term_lessons_like_a_cli_run(server: str, tmp_path: Path) -> None:
    """The learning node writes through the server's store: a second run started from the
    SDK begins with what the first one taught each agent."""
    policy = tmp_path / "policy.toml"
    policy.write_text("[default]\nmin_support = 1\n")  # one finalized run matures a lesson
    context = SCRIPTED | {"principal": "studio", "long_term_policy": str(policy)}

    async def scenario() -> tuple[dict, dict, list]:
        client = get_client(url=server)
        runs = []
        for _ in range(2):
            thread_id = (await client.threads.create())["thread_id"]
            runs.append(await client.runs.wait(thread_id, "intrinsic", input={}, context=context))
        stored = await client.store.search_items(("ima_longterm", "studio"), limit=100)
        return runs[0], runs[1], stored["items"]

    first, second, stored = run(scenario())
    learned = first["long_term"]["learned"]
    assert learned["learned"] is True and sum(learned["added"].values()) > 0
    assert {tuple(i["namespace"][:3]) for i in stored} >= {("ima_longterm", "studio", "private")}
    start = second["long_term"]["start"]
    assert start["available"] and start["loaded"]["private"] > 0
    lessons = [s["lessons"] for s in second["intrinsic_memory"].values() if s.get("lessons")]
    assert lessons and all("Lessons from my earlier runs" in text for text in lessons)
