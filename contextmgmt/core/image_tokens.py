"""What an image part costs in tokens, by the provider's image rule (docs/tokens.md).

OpenAI-style vision models bill an image by its size: at ``detail: "low"`` a flat 85
tokens; otherwise the image is scaled to fit 2048x2048, then its shorter side down to 768
if it is longer, and cut into 512-pixel tiles: 85 + 170 per tile. A 1024x1024 image is 765
(the seeds' flat rate); a phone screenshot 1170x2532 is 1445; a 64x64 icon 255.

The size is read from the data URL's own header bytes (PNG, GIF, WebP, JPEG) — only the
first few kilobytes are decoded, the pixels never. An image whose size cannot be read (a
remote URL, an unknown or damaged format) counts as the flat 765.

Plain Python: no Django, no Pillow.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from typing import Any

FLAT_IMAGE_TOKENS = 765  # an image of unknown size (a 1024x1024 image at high detail)
LOW_DETAIL_TOKENS = 85
BASE_TOKENS = 85
TILE_TOKENS = 170
TILE_SIZE = 512
_MAX_SIDE = 2048
_SHORT_SIDE = 768

# Decoding a whole multi-megabyte image to find its size would cost more than the rest
# of the estimate; JPEG sizes sit behind EXIF/ICC segments, so a JPEG may need more.
_FIRST_CHARS = 4_096
_JPEG_MAX_CHARS = 262_144
# The most of a file the size is ever read from: a data URL of only its first HEADER_BYTES
# bytes (a multiple of 3, so its base64 is a prefix of the whole file's) counts the same.
HEADER_BYTES = _JPEG_MAX_CHARS // 4 * 3

# Estimates run on every guard check; a data URL's str hash is cached by Python, so this
# lookup is O(1) after the first. Keyed by (hash, length): no multi-megabyte key kept alive.
_CACHE_LIMIT = 2_048
_cache: dict[tuple[int, int, str], int] = {}


def tile_tokens(width: int, height: int, detail: str = "auto") -> int:
    """Tokens of a ``width`` x ``height`` image under the tile rule."""
    if detail == "low":
        return LOW_DETAIL_TOKENS
    if width <= 0 or height <= 0:
        return FLAT_IMAGE_TOKENS
    w, h = float(width), float(height)
    if max(w, h) > _MAX_SIDE:
        scale = _MAX_SIDE / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > _SHORT_SIDE:
        scale = _SHORT_SIDE / min(w, h)
        w, h = w * scale, h * scale
    tiles = math.ceil(w / TILE_SIZE) * math.ceil(h / TILE_SIZE)
    return BASE_TOKENS + TILE_TOKENS * tiles


def image_part_tokens(part: dict[str, Any]) -> int:
    """Tokens of one OpenAI ``image_url`` part."""
    image = part.get("image_url")
    url: object
    if isinstance(image, str):
        url, detail = image, "auto"
    elif isinstance(image, dict):
        url, detail = image.get("url"), image.get("detail") or "auto"
    else:
        return FLAT_IMAGE_TOKENS
    if detail == "low":
        return LOW_DETAIL_TOKENS
    if not isinstance(url, str) or not url.startswith("data:"):
        return FLAT_IMAGE_TOKENS
    key = (hash(url), len(url), detail)
    found = _cache.get(key)
    if found is not None:
        return found
    size = data_url_size(url)
    tokens = tile_tokens(*size, detail) if size else FLAT_IMAGE_TOKENS
    if len(_cache) >= _CACHE_LIMIT:
        _cache.clear()
    _cache[key] = tokens
    return tokens


def data_url_size(url: str) -> tuple[int, int] | None:
    """(width, height) from a base64 data URL's image header, or None."""
    comma = url.find(",")
    if comma < 0 or ";base64" not in url[:comma]:
        return None
    payload = url[comma + 1 :]
    head = _decode(payload[:_FIRST_CHARS])
    if head is None:
        return None
    size = image_size(head)
    if size is None and head[:2] == b"\xff\xd8" and len(payload) > _FIRST_CHARS:
        more = _decode(payload[:_JPEG_MAX_CHARS])
        size = image_size(more) if more else None
    return size


def _decode(chunk: str) -> bytes | None:
    chunk = chunk[: len(chunk) - len(chunk) % 4]
    try:
        return base64.b64decode(chunk, validate=False)
    except (binascii.Error, ValueError):
        return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from the first bytes of a PNG, GIF, WebP or JPEG file, or None."""
    try:
        if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
            return struct.unpack(">II", data[16:24])
        if data[:6] in (b"GIF87a", b"GIF89a"):
            return struct.unpack("<HH", data[6:10])
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            return _webp_size(data)
        if data[:2] == b"\xff\xd8":
            return _jpeg_size(data)
    except struct.error:  # a header cut short
        return None
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    kind = data[12:16]
    if kind == b"VP8X":
        w = int.from_bytes(data[24:27], "little") + 1
        h = int.from_bytes(data[27:30], "little") + 1
        return w, h
    if kind == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
        w, h = struct.unpack("<HH", data[26:30])
        return w & 0x3FFF, h & 0x3FFF
    if kind == b"VP8L" and data[20:21] == b"\x2f":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None


# Start-of-frame markers (baseline, progressive, …); not DHT (C4), JPG (C8) or DAC (CC).
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in _SOF:
            h, w = struct.unpack(">HH", data[i + 5 : i + 9])
            return w, h
        if marker == 0xD9 or marker == 0xDA:  # end of image, start of scan: no frame seen
            return None
        (length,) = struct.unpack(">H", data[i + 2 : i + 4])
        i += 2 + length
    return None
