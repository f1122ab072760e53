from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

from ima.core.settings import MEETING_NEWS_WORDS, RunContext
from ima.meeting.builder import compile_graph
from ima.runs.registry import RunRegistry
from ima.runs.runner import load_state
from ima.tasks import TASKS_DIR, Task, load_task


def task_file(tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """The data-pipeline task file as `edit` changes it, written to `tmp_path`."""
    data = yaml.safe_load((TASKS_DIR / "data_pipeline.yaml").read_text())
    edit(data)
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def start_ima(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """`ima ARGS` in a process of its own (to kill or race it), its output captured."""
    return subprocess.Popen(
        [sys.executable, "-m", "ima", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def turns_so_far(db: str, thread: str) -> int:
    """Turns in a thread's latest checkpoint; 0 before the run is registered."""
    registry = RunRegistry(db)
    try:
        record = registry.find(thread)
    finally:
        registry.close()
    return len(load_state(record, db).get("transcript", [])) if record else 0


def rounds_to_finalize(task: Task, rejected_votes: int = 0) -> int:
    """Full rounds of a run whose consensus vote fails `rejected_votes` times before every
    agent accepts: each phase before consensus for its rounds, then one consensus round per
    vote; when the consensus phase has used all its rounds without agreement the team goes
    back to the phase before (for its rounds) and votes again."""
    *before, consensus = task.schedule.phases
    back = before[-1].rounds if before else 0
    retries = rejected_votes // consensus.rounds
    return sum(p.rounds for p in before) + rejected_votes + 1 + retries * back


def stored_state(thread: str, db: str = "runs/ima.sqlite") -> dict[str, Any]:
    """A run's latest state, read from its database (by default the one `ima run` makes in
    the working folder)."""
    registry = RunRegistry(db)
    try:
        record = registry.get(thread)
    finally:
        registry.close()
    return load_state(record, db)


def remembered_turns(
    values: dict[str, Any], news_words: int = MEETING_NEWS_WORDS, task: Task | None = None
) -> set[int]:
    """The turns of a finished run (of `task`, the bundled one by default) that gave their
    speaker's memory something of its own (neither a bare vote nor a turn that repeats the
    meeting)
    and news to it as it stood then (`IntrinsicMemory.is_news`); the others cost no update."""
    from intrinsic_memory import IntrinsicMemory, only_markers
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel

    from ima.meeting.nodes.memory_update import repeats_the_meeting

    task = task or load_task("data-pipeline")
    memory = IntrinsicMemory(FakeMessagesListChatModel(responses=[]), min_new_words=news_words)
    news = set()
    for turn in values["transcript"]:
        speaker, index = turn["speaker"], turn["index"]
        if only_markers(turn["content"]) or (
            news_words and repeats_the_meeting(task, values, turn)
        ):
            continue
        before = [v for v in values["memory_log"] if v["role"] == speaker and v["turn"] < index]
        shaped = memory.with_template(values["templates"][speaker])
        if shaped.is_news(before[-1]["text"] if before else "", turn["content"]):
            news.add(index)
    return news


def turns_to_finalize(task: Task, rejected_votes: int = 0) -> int:
    """Turns of such a run: its rounds in the schedule's speaking order, then the
    facilitator's FINALIZE turn."""
    return rounds_to_finalize(task, rejected_votes) * len(task.schedule.round_order) + 1


class PromptRecorder(BaseCallbackHandler):
    """Every chat-model call of a run: its metadata and the messages the model received."""

    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, Any], list[BaseMessage]]] = []

    def on_chat_model_start(self, serialized, messages, *, metadata=None, **kwargs):  # type: ignore[override]
        self.calls.append((metadata or {}, messages[0]))

    def of_kind(self, kind: str) -> list[tuple[dict[str, Any], list[BaseMessage]]]:
        return [(meta, messages) for meta, messages in self.calls if meta.get("ima_kind") == kind]


@pytest.fixture(scope="session")
def task() -> Task:
    return load_task("data-pipeline")


@pytest.fixture
def run_graph(task: Task) -> Callable[..., dict[str, Any]]:
    """Run the data-pipeline graph in memory with the scripted model."""

    def _run(
        memory_mode: str = "intrinsic",
        model: str | BaseChatModel = "scripted",
        callbacks: list[BaseCallbackHandler] | None = None,
        **settings: Any,
    ) -> dict[str, Any]:
        """`model`: a spec the settings name, or a chat model given to the graph."""
        given = model if isinstance(model, BaseChatModel) else None
        graph = compile_graph(task, memory_mode, checkpointer=InMemorySaver(), model=given)  # type: ignore[arg-type]
        context = RunContext(model="scripted" if given else model, **settings)
        config = {"configurable": {"thread_id": "t"}, "callbacks": callbacks or []}
        return graph.invoke({}, config, context=context)

    return _run


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path):
    """Run `ima ARGS` in-process; returns (exit code, stdout, stderr)."""
    from ima.cli import app as cli_module

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")

    def _cli(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["ima", *args])
        code = 0
        try:
            cli_module.main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return _cli


@pytest.fixture(scope="session")
def postgres_cluster():
    """A private PostgreSQL server for the whole session (initdb, free loopback port)."""
    from benchmarks.pgcluster import private_cluster, server_bin

    if server_bin("initdb") is None:
        pytest.skip(
            "PostgreSQL server not installed (no initdb): `make test` installs it "
            "(apt-get install postgresql)"
        )
    with private_cluster() as cluster:
        yield cluster


@pytest.fixture
def pg_url(postgres_cluster) -> Iterator[str]:
    """The URL of a new, empty database on the private server."""
    from ima.storage.postgres import close_pool

    url = postgres_cluster.new_database()
    yield url
    close_pool(url)


@pytest.fixture(params=["sqlite", "postgres"])
def db_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where runs live, once per backend: a SQLite path, then a postgresql:// URL."""
    if request.param == "sqlite":
        return str(tmp_path / "runs" / "ima.sqlite")
    return request.getfixturevalue("pg_url")


@pytest.fixture(params=["sqlite", "postgres"])
def memory_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where long-term memory lives, once per backend: a SQLite file, then a URL."""
    if request.param == "sqlite":
        return str(tmp_path / "memory.sqlite")
    return request.getfixturevalue("pg_url")


def md_table(report: str, first_header: str) -> dict[str, dict[str, str]]:
    """The Markdown table whose header starts with `first_header`: each row's cells by
    column name (repeated names get the column number), keyed by the first cell's text."""
    lines = report[report.index(f"| {first_header} |") :].split("\n\n")[0].splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    names = [h if header.count(h) == 1 else f"{h}{i}" for i, h in enumerate(header)]
    table = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        key = re.sub(r"^\[(.*)\]\(.*\)$", r"\1", cells[0])  # a link: its text
        table[key] = dict(zip(names, cells, strict=True))
    return table
