"""The examples run as their docs say: every one answers --help; those built on the library
run offline on the scripted model (fast) and on the embedded one (marked `model`); the
library's reference page is the one its docstrings make."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
ON_THE_LIBRARY = ["writer_critic.py", "supervisor.py", "research_team.py"]


def run(example: str, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / example), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_answers_help(example):
    done = run(example.name, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:") and "Traceback" not in done.stderr


def memories(out: str) -> dict[str, int]:
    return {m[0]: int(m[1]) for m in re.findall(r"^(\w+)'s memory \(version (\d+)\):", out, re.M)}


@pytest.mark.slow
@pytest.mark.parametrize("example", ON_THE_LIBRARY)
def test_the_library_examples_run_on_the_scripted_model(example):
    done = run(example, "--model", "scripted")
    assert done.returncode == 0, done.stderr
    kept = memories(done.stdout)
    assert len(kept) == 2 and all(version >= 1 for version in kept.values()), done.stdout


@pytest.mark.model
@pytest.mark.parametrize("example", ON_THE_LIBRARY)
def test_the_library_examples_run_on_the_embedded_model(example):
    quick = ["--rounds", "1"] if example == "writer_critic.py" else ["--requests", "1"]
    done = run(example, "--model", "embedded", *quick, timeout=1800)
    assert done.returncode == 0, done.stderr
    assert memories(done.stdout), done.stdout  # at least one agent formed a memory


@pytest.mark.parametrize("example", ON_THE_LIBRARY)
def test_examples_mark_the_lines_they_add(example):
    lines = (ROOT / "examples" / example).read_text().splitlines()
    marked = [line for line in lines if "# +" in line and line.split("#")[0].strip()]
    assert 2 <= len(marked) <= 5  # two agents each: a few lines, not a rewrite


def test_the_reference_page_documents_every_public_name_as_the_code_does():
    """docs/reference.md is generated from the docstrings; a stale page fails here."""
    import importlib.util

    import intrinsic_memory

    spec = importlib.util.spec_from_file_location(
        "make_reference", ROOT / "docs" / "make_reference.py"
    )
    page = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(page)
    # a constant's docstring is the string under its assignment, not its type's docstring
    undocumented = [n for n in intrinsic_memory.__all__ if not page.doc_of(n).strip()]
    assert undocumented == []
    check = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "make_reference.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout
