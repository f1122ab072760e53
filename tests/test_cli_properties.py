"""Property-based test of the command line: random thread ids, budgets, turn caps, seeds,
task files mutated from the bundled one and config files of random bytes. Every invocation
ends with exit 0 or 2 (or 1 with a hint that works), never a traceback, and writes nothing
outside --out and --db."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ima.tasks import TASKS_DIR

pytestmark = pytest.mark.slow
BUNDLED = (TASKS_DIR / "data_pipeline.yaml").read_text()
LINES = BUNDLED.splitlines()


@st.composite
def mutated_task(draw: st.DrawFn) -> str:
    """The bundled task file with one line deleted, duplicated or overwritten."""
    lines = list(LINES)
    i = draw(st.integers(0, len(lines) - 1))
    how = draw(st.sampled_from(["delete", "duplicate", "overwrite", "keep"]))
    if how == "delete":
        del lines[i]
    elif how == "duplicate":
        lines.insert(i, lines[i])
    elif how == "overwrite":
        lines[i] = draw(st.text(max_size=40))
    return "\n".join(lines) + "\n"


# Each input is valid often enough that runs happen too, not only refusals.
thread_ids = st.one_of(
    st.none(),
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,30}", fullmatch=True),
    st.text(min_size=1, max_size=120).filter(lambda t: "\x00" not in t and not t.startswith("-")),
)
budgets = st.one_of(st.integers(1500, 6000), st.integers(-10, 6000))
turn_caps = st.one_of(st.integers(1, 4), st.integers(-2, 5))
configs = st.one_of(
    st.none(),
    st.sampled_from([b'template = "manual"\n', b"max_turn_words = 30\n", b"review = 1\n"]),
    st.binary(max_size=80),
)


def invoke(args: list[str]) -> tuple[int, str]:
    """`ima ARGS` in this process; (exit code, everything printed)."""
    from ima.cli import app as cli

    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["ima", *args]
    code = 0
    try:  # rich consoles follow sys.stdout/sys.stderr, which these redirect
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                cli.main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = argv
    return code, out.getvalue() + err.getvalue()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    thread=thread_ids,
    budget=budgets,
    turn_cap=turn_caps,
    seed=st.integers(-(2**31), 2**31),
    task=st.one_of(st.none(), mutated_task()),
    config=configs,
)
def test_every_invocation_ends_cleanly(monkeypatch, thread, budget, turn_cap, seed, task, config):
    monkeypatch.delenv("IMA_CONFIG", raising=False)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        inputs = set()
        args = ["run", "--model", "scripted", "--no-long-term", "--json"]
        args += ["--budget", str(budget), "--turn-cap", str(turn_cap), "--seed", str(seed)]
        args += ["--out", str(root / "out"), "--db", str(root / "db" / "ima.sqlite")]
        if thread is not None:
            args += ["--thread", thread]
        if task is not None:
            (root / "task.yaml").write_text(task)
            inputs.add(root / "task.yaml")
            args += ["--task", str(root / "task.yaml")]
        if config is not None:
            (root / "ima.toml").write_bytes(config)
            inputs.add(root / "ima.toml")
            monkeypatch.setenv("IMA_CONFIG", str(root / "ima.toml"))
        cwd = os.getcwd()
        os.chdir(root)
        try:
            code, printed = invoke(args)
        finally:
            os.chdir(cwd)
            monkeypatch.delenv("IMA_CONFIG", raising=False)
        event(f"exit {code}")
        assert "Traceback" not in printed, printed
        assert code in (0, 1, 2), (code, printed)
        if code == 1:
            assert "ima resume" in printed or "ima export" in printed, printed
        if code == 2:
            assert "error: " in printed, printed
        allowed = (root / "out", root / "db")
        for path in root.rglob("*"):
            if path in inputs or path in allowed:
                continue
            assert any(parent in allowed for parent in path.parents), f"stray file {path}"
