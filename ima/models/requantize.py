"""Requantize a GGUF file to Q4_0 with llama.cpp's own Python library (`gguf`).

Why Q4_0: on AVX2 CPUs llama.cpp repacks Q4_0 weights at load time into interleaved blocks
its fastest kernels read; the bundled file's Q5_0, Q6_K and Q8_0 tensors have no such path.
Every quantized tensor is dequantized to float32 and quantized again to Q4_0; float tensors
(norms, biases) are copied unchanged. The conversion is pure numpy, so the same input gives
the same bytes on every machine (checked against a recorded sha256 by the caller).

Tensors are converted one at a time while they are written, so peak memory stays near one
tensor's float32 copy (about 0.5 GB for the embedding table), not the whole model's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

__all__ = ["requantize_q4_0"]

_FILE_TYPE_KEY = "general.file_type"
_ARCH_KEY = "general.architecture"


def requantize_q4_0(
    source: Path, target: Path, progress: Callable[[int, int], None] | None = None
) -> None:
    """Write `target`, a Q4_0 copy of the GGUF file `source` (not atomically: the caller
    writes to a temporary name and renames). `progress(done, total)` is called per tensor."""
    import gguf  # heavy (numpy, yaml): imported only when a conversion runs

    reader = gguf.GGUFReader(source)
    arch = reader.fields[_ARCH_KEY].contents()
    writer = gguf.GGUFWriter(target, arch=arch)
    for field in reader.fields.values():
        # GGUF.* are virtual fields of the reader; the writer adds the architecture itself
        if field.name.startswith("GGUF.") or field.name in (_ARCH_KEY, _FILE_TYPE_KEY):
            continue
        kind = field.types[0]
        sub_type = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), kind, sub_type=sub_type)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_0)

    q4_0 = gguf.GGMLQuantizationType.Q4_0
    floats = (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16)

    def converted(tensor: gguf.ReaderTensor) -> tuple[np.ndarray, gguf.GGMLQuantizationType]:
        if tensor.tensor_type in floats:
            return tensor.data, tensor.tensor_type
        weights = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        return gguf.quants.quantize(weights, q4_0), q4_0

    # The header lists every tensor's size before any data, so the sizes come first; the
    # Q4_0 size of a tensor follows from its shape without converting it.
    for tensor in reader.tensors:
        if tensor.tensor_type in floats:
            data = tensor.data
            writer.add_tensor_info(tensor.name, data.shape, data.dtype, data.nbytes)
        else:
            shape = tuple(int(n) for n in reversed(tensor.shape.tolist()))
            byte_shape = gguf.quants.quant_shape_to_byte_shape(shape, q4_0)
            nbytes = int(np.prod(byte_shape))
            writer.add_tensor_info(tensor.name, byte_shape, np.dtype(np.uint8), nbytes, q4_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    total = len(reader.tensors)
    for done, tensor in enumerate(reader.tensors, 1):
        data, _ = converted(tensor)
        writer.write_tensor_data(data, tensor_endianess=reader.endianess)
        if progress:
            progress(done, total)
    writer.close()
