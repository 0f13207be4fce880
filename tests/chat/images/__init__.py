"""Image bytes for upload tests, built in memory (no binary fixtures in the repo)."""

from __future__ import annotations

import asyncio
import io
import random
import struct
import zlib

from PIL import Image


def image_bytes(fmt: str, size: tuple[int, int] = (32, 24), *, noise: bool = False) -> bytes:
    """A real image in Pillow format ``fmt`` (PNG, JPEG, WEBP, GIF, BMP)."""
    width, height = size
    if noise:
        # Incompressible pixels, so the file is large enough that cutting it truncates data.
        pixels = random.Random(0).randbytes(width * height * 3)
        image = Image.frombytes("RGB", size, pixels)
    else:
        image = Image.new("RGB", size, (200, 40, 90))
    if fmt == "GIF":
        image = image.convert("P")
    out = io.BytesIO()
    image.save(out, format=fmt)
    return out.getvalue()


def png_header_only(width: int, height: int) -> bytes:
    """A tiny PNG that claims ``width`` x ``height`` pixels: a decompression bomb's header.

    One compressed zero row is enough for Pillow to identify it; the claimed size is what a
    bomb would make the decoder allocate.
    """

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)  # 1-bit greyscale
    idat = zlib.compress(b"\x00" * (1 + (width + 7) // 8))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def note_waits_for_descriptions(monkeypatch) -> asyncio.Event:
    """An event set once a describer starts waiting for a description another caller is
    making (``chat.image_describer``), instead of asking the model itself."""
    from chat import image_describer

    waiting = asyncio.Event()
    wait_for = image_describer._wait_for

    async def noting(claims, time_limit):
        claims = list(claims)
        if claims:
            waiting.set()
        return await wait_for(claims, time_limit)

    monkeypatch.setattr(image_describer, "_wait_for", noting)
    return waiting
