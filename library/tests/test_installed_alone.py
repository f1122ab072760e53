"""The library installs light: alone in a fresh venv (`make test-library`), it brings none
of the app's stack, and its langgraph and langchain requirements are ranges."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re

import pytest

APP_STACK = {
    "intrinsic-memory-agents",
    "scipy",
    "matplotlib",
    "psycopg",
    "typer",
    "rich",
    "jinja2",
    "unified-planning",
    "xllamacpp",
    "langgraph-checkpoint-postgres",
}


@pytest.mark.skipif(
    importlib.util.find_spec("ima") is not None,
    reason="the app is installed here: run in the library's own venv (make test-library)",
)
def test_installed_alone_the_library_brings_none_of_the_apps_stack():
    installed = {d.metadata["Name"].lower() for d in importlib.metadata.distributions()}
    assert installed & APP_STACK == set()
    import intrinsic_memory

    for name in intrinsic_memory.__all__:  # the whole public API imports
        getattr(intrinsic_memory, name)


def test_its_requirements_are_ranges():
    requires = importlib.metadata.requires("intrinsic-memory") or []
    core = [r for r in requires if "extra ==" not in r]
    for name in ("langgraph", "langchain-core", "langchain"):
        (spec,) = [r for r in core if re.match(rf"{name}\b(?![-\w])", r)]
        assert ">=" in spec and "<" in spec and "==" not in spec, spec
