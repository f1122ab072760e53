"""The library's snippet in both READMEs runs as printed: its imports, its graph and one
invocation, with only the chat model swapped for a fake one (no server here)."""

from __future__ import annotations

import contextlib
import io
import re
import runpy

import langchain.chat_models
import pytest
from conftest import ROOT, Recorder

READMES = [ROOT / "README.md", ROOT / "library" / "README.md"]


def snippet(readme) -> str:
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
    return next(b for b in blocks if "add_intrinsic_memory(" in b)


@pytest.mark.parametrize("readme", READMES, ids=["README.md", "library/README.md"])
def test_the_readme_snippet_runs_as_printed(readme, monkeypatch, tmp_path):
    model = Recorder()
    monkeypatch.setattr(langchain.chat_models, "init_chat_model", lambda spec: model)
    script = tmp_path / "snippet.py"
    script.write_text(snippet(readme))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        runpy.run_path(str(script))
    assert len(model.agent_calls()) == 2 and len(model.memory_calls()) == 2
    assert printed.getvalue().startswith("## ")  # the writer's memory, as Markdown


def test_both_readmes_show_the_same_snippet():
    assert snippet(READMES[0]) == snippet(READMES[1])
