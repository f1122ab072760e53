from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from ima.core.settings import RunContext
from ima.graph.builder import compile_graph
from ima.tasks import Task, load_task


@pytest.fixture(scope="session")
def task() -> Task:
    return load_task("data-pipeline")


@pytest.fixture
def run_graph(task: Task) -> Callable[..., dict[str, Any]]:
    """Run the data-pipeline graph in memory with the scripted model."""

    def _run(
        memory_mode: str = "intrinsic", model: str = "scripted", **settings: Any
    ) -> dict[str, Any]:
        graph = compile_graph(task, memory_mode, checkpointer=InMemorySaver())  # type: ignore[arg-type]
        context = RunContext(model=model, **settings)
        return graph.invoke({}, {"configurable": {"thread_id": "t"}}, context=context)

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
    from ima.runs.database import close_pool

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
