"""Image parts are estimated by the provider's tile rule, read from the image's own header."""

from __future__ import annotations

import base64
import io
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from contextmgmt.core.image_tokens import (
    FLAT_IMAGE_TOKENS,
    data_url_size,
    image_part_tokens,
    tile_tokens,
)
from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.tokens import estimate_message_tokens, estimate_tokens, usage_sample


def _data_url(fmt: str, size: tuple[int, int], **save) -> str:
    image = Image.new("RGB", size, (10, 120, 200))
    if fmt == "GIF":
        image = image.convert("P")
    out = io.BytesIO()
    image.save(out, format=fmt, **save)
    mime = {"JPEG": "jpeg", "PNG": "png", "GIF": "gif", "WEBP": "webp"}[fmt]
    return f"data:image/{mime};base64,{base64.b64encode(out.getvalue()).decode()}"


def _part(url: str, detail: str | None = None) -> dict:
    image = {"url": url} if detail is None else {"url": url, "detail": detail}
    return {"type": "image_url", "image_url": image}


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        ((64, 64), 85 + 170),  # one tile
        ((512, 512), 85 + 170),
        ((513, 512), 85 + 2 * 170),
        ((1024, 1024), 765),  # shortest side 768: 2x2 tiles
        ((2048, 4096), 85 + 6 * 170),  # fit 2048 → 1024x2048 → 768x1536: 2x3 tiles
        ((1170, 2532), 85 + 8 * 170),  # a phone screenshot: 768x1662, 2x4 tiles
        ((4000, 100), 85 + 4 * 170),  # 2048x51: 4x1 tiles
    ],
)
def test_tile_rule_follows_openai_sizes(size, expected):
    assert tile_tokens(*size) == expected


def test_low_detail_is_flat_85():
    assert tile_tokens(4000, 4000, "low") == 85
    assert image_part_tokens(_part(_data_url("PNG", (3000, 3000)), "low")) == 85


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "WEBP"])
def test_size_is_read_from_each_format_header(fmt):
    url = _data_url(fmt, (700, 300))
    assert data_url_size(url) == (700, 300)
    assert image_part_tokens(_part(url)) == tile_tokens(700, 300)


def test_lossless_webp_size_is_read():
    assert data_url_size(_data_url("WEBP", (333, 77), lossless=True)) == (333, 77)


def test_jpeg_size_behind_a_large_exif_block_is_read():
    exif = Image.Exif()
    exif[0x010E] = "x" * 20_000  # ImageDescription: pushes the frame header past 4 KB
    url = _data_url("JPEG", (900, 100), exif=exif.tobytes())
    assert data_url_size(url) == (900, 100)


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/a.png",
        "data:image/png;base64,iVBORw0KGgo=",  # the signature only
        "data:image/png;base64,!!!not base64!!!",
        "data:text/plain,hello",
        "data:image/bmp;base64," + base64.b64encode(b"BM" + b"\0" * 60).decode(),
    ],
)
def test_an_unreadable_size_counts_the_flat_765(url):
    assert image_part_tokens(_part(url)) == FLAT_IMAGE_TOKENS


def test_message_estimate_uses_the_image_size_and_stays_consistent_with_usage_sample():
    small, large = _data_url("PNG", (64, 64)), _data_url("PNG", (3000, 1000))
    msg = ChatMessage(role="user", content=[{"type": "text", "text": "hi"}, _part(small)])
    assert estimate_message_tokens(msg) == 4 + estimate_tokens("hi") + 255
    assert estimate_tokens([_part(large)]) == tile_tokens(3000, 1000) == 85 + 8 * 170
    _counts, fixed = usage_sample([msg])
    assert fixed == 4 + 255


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5000), st.integers(1, 5000))
def test_png_header_sizes_round_trip_and_tiles_stay_in_bounds(width, height):
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    png = b"\x89PNG\r\n\x1a\n" + chunk(
        b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    )
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    assert data_url_size(url) == (width, height)
    tokens = image_part_tokens(_part(url))
    # Never more than 2048x768 worth of tiles (4x2 or 3x3 after scaling), never under 1 tile.
    assert 255 <= tokens <= 85 + 170 * 12
