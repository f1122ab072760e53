"""The package's layers: imports point down only, and every package has a layer."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _layers() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["type"] == "layers"]
    return [name for layer in contract["layers"] for name in re.findall(r"ima\.\w+", layer)]


def test_no_import_points_up_a_layer():
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert re.search(r"Contracts: \d+ kept, 0 broken", proc.stdout), proc.stdout[-2000:]


def test_every_package_sits_in_a_layer():
    packages = {f"ima.{p.parent.name}" for p in (ROOT / "ima").glob("*/__init__.py")}
    assert packages <= set(_layers()), (
        f"add to [tool.importlinter] layers: {packages - set(_layers())}"
    )


def test_the_license_the_package_declares_is_the_repositorys_license_file():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    text = (ROOT / "LICENSE").read_text()
    assert declared == "MIT" and text.startswith("MIT License\n")
    assert "Copyright (c) 2026 Intrinsic Memory Agents contributors" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS"' in text


def test_no_module_imports_itself_round_a_loop():
    """No import loop between the app's and the library's modules, imports inside functions
    included (TYPE_CHECKING imports are not run, so they are left out)."""
    import grimp

    graph = grimp.build_graph("ima", "intrinsic_memory", exclude_type_checking_imports=True)
    loops = [
        (module, other)
        for module in sorted(graph.modules)
        for other in graph.find_modules_directly_imported_by(module)
        if graph.chain_exists(importer=other, imported=module)
    ]
    assert loops == [], f"modules that import each other (directly or round a loop): {loops}"


def test_the_examples_import_the_library_by_its_public_names_only():
    """The examples are what users copy: they use `from intrinsic_memory import ...` alone (the
    app and the benchmarks are held to it by an import contract)."""
    import ast

    def modules(node: ast.AST) -> list[str]:
        if isinstance(node, ast.ImportFrom):
            return [node.module or ""]
        return [alias.name for alias in node.names] if isinstance(node, ast.Import) else []

    reached = [
        f"{path.name}:{node.lineno} {module}"
        for path in sorted((ROOT / "examples").glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        for module in modules(node)
        if module.startswith("intrinsic_memory.")
    ]
    assert reached == [], f"import these from intrinsic_memory itself: {reached}"


def test_the_command_line_starts_without_the_planner_or_langchain_agents():
    """Every `ima` process pays for what the command line imports: unified-planning (a PDDL
    run's) and langchain.agents (the library's create_agent middleware's) cost seconds and
    load only where they are used."""
    heavy = "('unified_planning', 'langchain.agents')"
    code = f"import sys, ima.cli.app; print([m for m in sys.modules if m.startswith({heavy})])"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
