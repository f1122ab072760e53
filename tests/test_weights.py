"""The embedded model's weights: the Q4_0 copy made on first use, checked, reused, and every
way its conversion can fail (the bundled Q4_K_M file then runs, after one line saying why).

A small GGUF file written with llama.cpp's own `gguf` library stands in for the bundled
model, and its recorded sizes and checksums are those of that file: no model is loaded.
"""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

gguf = pytest.importorskip("gguf")
np = pytest.importorskip("numpy")

from ima.models import requantize, weights  # noqa: E402


def write_small_gguf(path: Path) -> None:
    """A GGUF file shaped like the bundled one: an F32 norm and a quantized matrix."""
    writer = gguf.GGUFWriter(path, arch="qwen2")
    writer.add_block_count(1)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_K_M)
    writer.add_tensor("blk.0.attn_norm.weight", np.ones(64, np.float32))
    matrix = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
    q8_0 = gguf.GGMLQuantizationType.Q8_0
    writer.add_tensor("blk.0.ffn_up.weight", gguf.quants.quantize(matrix, q8_0), raw_dtype=q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A model cache holding a verified stand-in for the bundled file; the Q4_0 checksum
    recorded is that of its conversion."""
    directory = tmp_path / "models"
    directory.mkdir()
    bundled = directory / weights.DEFAULT_MODEL_FILE
    write_small_gguf(bundled)
    sha256 = weights._sha256(bundled)
    (directory / f"{bundled.name}.sha256").write_text(sha256 + "\n")
    monkeypatch.setattr(weights, "DEFAULT_MODEL_SIZE", bundled.stat().st_size)
    monkeypatch.setattr(weights, "DEFAULT_MODEL_SHA256", sha256)
    reference = tmp_path / "reference.gguf"
    requantize.requantize_q4_0(bundled, reference)
    monkeypatch.setattr(weights, "Q4_0_MODEL_SIZE", reference.stat().st_size)
    monkeypatch.setattr(weights, "Q4_0_MODEL_SHA256", weights._sha256(reference))
    return directory


BUNDLED_ONLY = [weights.DEFAULT_MODEL_FILE, f"{weights.DEFAULT_MODEL_FILE}.sha256"]


def ensure(cache: Path, kind: str = "q4_0") -> tuple[Path, list[str]]:
    """The weights file chosen and the lines written about it."""
    out = io.StringIO()
    path = weights.ensure_weights(kind, cache, out=out)  # type: ignore[arg-type]
    return path, out.getvalue().splitlines()


def fell_back(cache: Path, lines: list[str], path: Path, reason: str) -> None:
    """The bundled file was chosen, one line said why, and nothing of the copy is left."""
    assert path == cache / weights.DEFAULT_MODEL_FILE
    assert lines[0].startswith("making the Q4_0 weights")
    assert len(lines) == 2 and lines[1].startswith("cannot make the Q4_0 weights ("), lines
    assert reason in lines[1] and "using the bundled Q4_K_M weights" in lines[1]
    assert sorted(p.name for p in cache.iterdir()) == BUNDLED_ONLY


def test_the_first_use_writes_checked_q4_0_weights_beside_the_bundled_file(cache: Path) -> None:
    path, lines = ensure(cache)
    assert path == cache / weights.Q4_0_MODEL_FILE
    assert lines == [f"making the Q4_0 weights in {cache}, once (about 20 s)"]
    marker = cache / f"{weights.Q4_0_MODEL_FILE}.sha256"
    assert marker.read_text().strip() == weights.Q4_0_MODEL_SHA256 == weights._sha256(path)
    types = {t.name: t.tensor_type for t in gguf.GGUFReader(path).tensors}
    assert types["blk.0.ffn_up.weight"] == gguf.GGMLQuantizationType.Q4_0
    assert types["blk.0.attn_norm.weight"] == gguf.GGMLQuantizationType.F32
    assert not [p for p in cache.iterdir() if p.name.endswith(".tmp")]


def never_convert(*_: Any) -> None:
    raise AssertionError("converted again")


def test_a_verified_copy_is_reused_without_converting_again(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _ = ensure(cache)
    monkeypatch.setattr(requantize, "requantize_q4_0", never_convert)
    again, lines = ensure(cache)
    assert again == first and lines == []


def test_the_bundled_weights_are_chosen_without_a_conversion(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(requantize, "requantize_q4_0", never_convert)
    path, lines = ensure(cache, "q4_k_m")
    assert path == cache / weights.DEFAULT_MODEL_FILE and lines == []


def test_no_space_left_falls_back_to_the_bundled_weights(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(source: Path, target: Path, progress: Any = None) -> None:
        target.write_bytes(b"GGUF" + b"\0" * 100)  # the disk fills after the first bytes
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(requantize, "requantize_q4_0", disk_full)
    path, lines = ensure(cache)
    fell_back(cache, lines, path, f"No space left on device: free 400 MB in {cache}")
    assert "IMA_CACHE_DIR" in lines[1]


def interrupted_after_one_tensor(exception: BaseException) -> Any:
    """The real conversion, stopped by `exception` once it has written a tensor."""
    real = requantize.requantize_q4_0
    written: list[int] = []

    def convert(source: Path, target: Path, progress: Any = None) -> None:
        def stop(done: int, total: int) -> None:
            written.append(target.stat().st_size)
            raise exception

        real(source, target, stop)

    return convert, written


def test_an_interrupted_write_leaves_no_file_and_falls_back(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    convert, written = interrupted_after_one_tensor(RuntimeError("stopped mid-write"))
    monkeypatch.setattr(requantize, "requantize_q4_0", convert)
    path, lines = ensure(cache)
    assert written and written[0] > 0  # a part of the file was on disk
    fell_back(cache, lines, path, "RuntimeError: stopped mid-write")


def test_ctrl_c_mid_write_stops_and_leaves_no_file(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    convert, _ = interrupted_after_one_tensor(KeyboardInterrupt())
    monkeypatch.setattr(requantize, "requantize_q4_0", convert)
    with pytest.raises(KeyboardInterrupt):
        ensure(cache)
    assert sorted(p.name for p in cache.iterdir()) == BUNDLED_ONLY


def test_a_wrong_checksum_leaves_no_file_and_falls_back(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(weights, "Q4_0_MODEL_SHA256", "0" * 64)
    path, lines = ensure(cache)
    fell_back(cache, lines, path, "checksum mismatch")


def test_a_missing_gguf_package_falls_back_and_says_how_to_install_it(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "gguf", None)  # import gguf raises ImportError
    path, lines = ensure(cache)
    fell_back(cache, lines, path, "install the embedded extra")


def test_a_copy_left_by_a_killed_conversion_is_removed(cache: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    left = cache / f".{weights.Q4_0_MODEL_FILE}.{dead.pid}.0123abcd.tmp"
    left.write_bytes(b"GGUF half")
    os.utime(left, (0, 0))  # nothing wrote to it for a long time
    path, _ = ensure(cache)
    assert path.name == weights.Q4_0_MODEL_FILE and not left.exists()


@pytest.fixture
def fake_loader(monkeypatch: pytest.MonkeyPatch) -> Any:
    """`embedded` builds a model naming the file of the weights asked for, loading nothing;
    the kinds asked for, in order."""
    from ima.models import _load, llamacpp

    asked: list[str] = []

    def load_embedded(path: Any, kind: str, **_: Any) -> llamacpp.EmbeddedChatModel:
        asked.append(kind)
        file = weights.Q4_0_MODEL_FILE if kind == "q4_0" else weights.DEFAULT_MODEL_FILE
        return llamacpp.EmbeddedChatModel(model_path=f"/cache/{file}")

    monkeypatch.setattr(llamacpp, "load_embedded", load_embedded)
    monkeypatch.delenv("IMA_WEIGHTS", raising=False)
    monkeypatch.setenv("IMA_CONFIG", os.devnull)
    _load.cache_clear()
    yield asked
    _load.cache_clear()


def test_the_setting_chooses_the_weights_each_run_loads(
    fake_loader: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ima.core.errors import UserError
    from ima.core.settings import DEFAULT_WEIGHTS, RunContext
    from ima.models import agent_model, weights_files

    assert RunContext().weights == DEFAULT_WEIGHTS
    assert weights_files(RunContext(weights="q4_0")) == {"weights_file": weights.Q4_0_MODEL_FILE}
    monkeypatch.setenv("IMA_WEIGHTS", "q4_k_m")
    agent_model(RunContext())
    assert fake_loader == ["q4_0", "q4_k_m"]
    assert weights_files(RunContext(model="scripted")) == {}
    with pytest.raises(UserError, match="weights='q4_1'"):
        RunContext(weights="q4_1")


def test_a_run_records_the_weights_file_it_loads(fake_loader: list[str], tmp_path: Path) -> None:
    from ima.core.settings import RunContext
    from ima.runs.runner import create_run

    record = create_run(
        task_ref="data-pipeline",
        memory_mode="intrinsic",
        settings=RunContext(model="embedded", weights="q4_k_m", long_term=False),
        db=tmp_path / "ima.sqlite",
        out_root=tmp_path / "runs",
    )
    assert record.settings["weights"] == "q4_k_m"
    assert record.settings["weights_file"] == weights.DEFAULT_MODEL_FILE
