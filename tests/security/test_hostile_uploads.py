"""Hostile uploads (issue 9, DESIGN §3, §7), beyond tests/chat/images/test_uploads.py.

- Polyglots (GIF+JavaScript, PNG+HTML, PNG+ZIP): a valid image with something else glued
  on. Pillow accepts the image; what matters is that the file can only ever be an image to
  a browser: served with its verified image type, ``nosniff``, a sandboxing CSP and an
  image extension, never as script or HTML.
- Zip bombs in PNG ancillary chunks (zTXt, iCCP): refused or accepted, but never inflated
  into memory; tracemalloc bounds the peak.
- Huge declared dimensions in GIF, JPEG and WebP headers: refused before any decoding.
- An EXIF-rotated JPEG: the stored width and height are the ones a viewer shows.
- A CMYK JPEG: accepted as a JPEG with its real size (browsers and models read it).
Every refusal is a clear 4xx that stores nothing.
"""

from __future__ import annotations

import io
import struct
import tracemalloc
import zipfile
import zlib
from collections import Counter

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from chat.models import Attachment
from tests.chat.images import image_bytes

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]


def upload(client, conversation, data: bytes, name: str, mime: str = "image/png"):
    return client.post(
        f"/api/conversations/{conversation.id}/attachments/",
        {"file": SimpleUploadedFile(name, data, content_type=mime)},
    )


def stored_files(root) -> list:
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def assert_refused(response, media_root) -> None:
    assert 400 <= response.status_code < 500, (response.status_code, response.content)
    assert response.json()["error"]["code"]
    assert Attachment.objects.count() == 0
    assert stored_files(media_root) == []


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_with_chunk(kind: bytes, data: bytes) -> bytes:
    """A real 8x8 PNG with one extra ancillary chunk inserted after IHDR."""
    png = image_bytes("PNG", (8, 8))
    ihdr_end = 8 + 25  # signature + IHDR chunk (4 length + 4 type + 13 data + 4 crc)
    return png[:ihdr_end] + _chunk(kind, data) + png[ihdr_end:]


def zip_bytes() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("payload.html", "<script>alert(document.domain)</script>")
    return out.getvalue()


# --- polyglots -------------------------------------------------------------------------------

POLYGLOTS = {
    "gif+js": (image_bytes("GIF") + b"\n;alert(document.cookie);//", "x.js", "image/gif"),
    "png+html": (
        image_bytes("PNG") + b"<html><body><script>alert(1)</script></body></html>",
        "x.html",
        "image/png",
    ),
    "png+zip": (image_bytes("PNG") + zip_bytes(), "x.zip", "image/png"),
}


@pytest.mark.parametrize("kind", list(POLYGLOTS))
def test_a_polyglot_is_only_ever_served_as_an_inert_image(
    logged_in_client, conversation, media_root, kind
):
    data, name, mime = POLYGLOTS[kind]
    response = upload(logged_in_client, conversation, data, name, mime="text/html")
    if response.status_code != 201:
        assert_refused(response, media_root)  # refusing it is fine too
        return
    described = response.json()
    assert described["mime_type"] == mime  # the verified type, not the client's text/html
    served = logged_in_client.get(described["url"])
    assert served.status_code == 200
    assert served["Content-Type"] == mime
    assert served["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in served["Content-Security-Policy"]
    assert "default-src 'none'" in served["Content-Security-Policy"]
    disposition = served["Content-Disposition"]
    assert disposition.startswith("inline;") and disposition.endswith(f'.{mime[6:]}"')
    assert ".js" not in disposition and ".html" not in disposition and ".zip" not in disposition


# --- bombs in ancillary chunks ------------------------------------------------------------------


def deflated_run(byte: bytes, size: int) -> bytes:
    """``zlib.compress(byte * size, 9)``, a stream as valid, made without compressing
    ``size`` bytes (2.3 s of CPU for 256 MB, and the 256 MB themselves; 0.1 s here): after a
    full flush the compressor starts afresh, so every further megabyte of the run deflates
    to the same bytes, and the checksum is summed a megabyte at a time."""
    block = 1 << 20
    assert size % block == 0
    chunk = byte * block
    squeezer = zlib.compressobj(9)
    first = squeezer.compress(chunk) + squeezer.flush(zlib.Z_FULL_FLUSH)
    again = squeezer.compress(chunk) + squeezer.flush(zlib.Z_FULL_FLUSH)
    end = squeezer.flush(zlib.Z_FINISH)[:-4]  # the last block, without the checksum of two
    checksum = 1
    for _ in range(size // block):
        checksum = zlib.adler32(chunk, checksum)
    return first + again * (size // block - 1) + end + checksum.to_bytes(4, "big")


def test_a_deflated_run_is_the_run_compressed():
    size = 8 << 20
    assert zlib.decompress(deflated_run(b"A", size)) == b"A" * size


def _ztxt_bomb(size: int) -> bytes:
    return b"Comment\x00\x00" + deflated_run(b"A", size)


def _iccp_bomb(size: int) -> bytes:
    return b"icc\x00\x00" + deflated_run(b"\x00", size)


@pytest.mark.parametrize(
    ("chunk", "payload"),
    [(b"zTXt", _ztxt_bomb), (b"iCCP", _iccp_bomb), (b"iTXt", None)],
    ids=["zTXt", "iCCP", "iTXt"],
)
def test_a_zip_bomb_in_a_png_chunk_is_never_inflated(
    logged_in_client, conversation, media_root, chunk, payload
):
    inflated = 256 * 1024 * 1024  # 256 MB once decompressed, ~250 KB on the wire
    if payload is None:  # iTXt: compressed flag set, same bomb
        data = b"Comment\x00\x01\x00\x00\x00" + deflated_run(b"B", inflated)
    else:
        data = payload(inflated)
    file = png_with_chunk(chunk, data)
    assert len(file) < 1_000_000
    tracemalloc.start()
    try:
        response = upload(logged_in_client, conversation, file, "bomb.png")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024 * 1024, f"{peak / 1e6:.0f} MB allocated for a {len(file)}-byte upload"
    if response.status_code == 201:
        attachment = Attachment.objects.get()
        assert (attachment.width, attachment.height) == (8, 8)
    else:
        assert_refused(response, media_root)


# --- huge declared dimensions -------------------------------------------------------------------


def gif_claiming(width: int, height: int) -> bytes:
    header = b"GIF89a" + struct.pack("<HHBBB", width, height, 0, 0, 0)
    descriptor = b"," + struct.pack("<HHHHB", 0, 0, width, height, 0)
    return header + descriptor + b"\x02\x02\x44\x01\x00;"


def jpeg_claiming(width: int, height: int) -> bytes:
    real = image_bytes("JPEG", (16, 16))
    sof = real.index(b"\xff\xc0")
    return real[: sof + 5] + struct.pack(">HH", height, width) + real[sof + 9 :]


def webp_claiming(width: int, height: int) -> bytes:
    """A VP8X (extended) WebP whose canvas claims ``width`` x ``height``."""
    vp8x = (
        b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    )
    real = image_bytes("WEBP", (16, 16))
    inner = b"VP8X" + struct.pack("<I", len(vp8x)) + vp8x + real[12:]
    return b"RIFF" + struct.pack("<I", 4 + len(inner)) + b"WEBP" + inner


@pytest.mark.parametrize(
    "make",
    [
        lambda: gif_claiming(65_535, 65_535),
        lambda: jpeg_claiming(65_500, 65_500),
        lambda: webp_claiming(16_383, 16_383),
    ],
    ids=["gif-65535x65535", "jpeg-65500x65500", "webp-16383x16383"],
)
def test_huge_declared_dimensions_are_refused_without_decoding(
    logged_in_client, conversation, media_root, make
):
    tracemalloc.start()
    try:
        response = upload(logged_in_client, conversation, make(), "huge.img")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert_refused(response, media_root)
    assert peak < 64 * 1024 * 1024


# --- orientation and colour -----------------------------------------------------------------------


def exif_rotated_jpeg() -> bytes:
    """Stored 40x20 pixels, EXIF orientation 6: a viewer shows it 20 wide, 40 tall."""
    image = Image.new("RGB", (40, 20), (10, 120, 200))
    exif = Image.Exif()
    exif[0x0112] = 6
    out = io.BytesIO()
    image.save(out, format="JPEG", exif=exif.tobytes())
    return out.getvalue()


def test_an_exif_rotated_jpeg_is_stored_with_the_dimensions_a_viewer_shows(
    logged_in_client, conversation
):
    response = upload(
        logged_in_client, conversation, exif_rotated_jpeg(), "phone.jpg", "image/jpeg"
    )
    assert response.status_code == 201, response.content
    described = response.json()
    assert (described["width"], described["height"]) == (20, 40)
    attachment = Attachment.objects.get()
    assert (attachment.width, attachment.height) == (20, 40)


def test_a_cmyk_jpeg_is_accepted_as_a_jpeg_with_its_size(logged_in_client, conversation):
    image = Image.new("CMYK", (30, 10), (0, 255, 255, 0))
    out = io.BytesIO()
    image.save(out, format="JPEG")
    response = upload(logged_in_client, conversation, out.getvalue(), "print.jpg", "image/jpeg")
    assert response.status_code == 201, response.content
    described = response.json()
    assert (described["mime_type"], described["width"], described["height"]) == (
        "image/jpeg",
        30,
        10,
    )


# --- fuzzed files -------------------------------------------------------------------------------

SEEDS = {fmt: image_bytes(fmt, (24, 16), noise=True) for fmt in ("PNG", "JPEG", "WEBP", "GIF")}


@st.composite
def damaged_images(draw) -> bytes:
    """A real image with some bytes overwritten, a chunk cut out or garbage appended."""
    data = bytearray(SEEDS[draw(st.sampled_from(sorted(SEEDS)))])
    for _ in range(draw(st.integers(0, 6))):
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        start = draw(st.integers(0, len(data) - 1))
        del data[start : start + draw(st.integers(1, 64))]
    return bytes(data) + draw(st.binary(max_size=32))


def test_fuzzed_uploads_never_500_and_store_all_or_nothing(
    logged_in_client, conversation, media_root
):
    @settings(
        max_examples=150,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(data=damaged_images() | st.binary(max_size=300))
    def check(data):
        before = Attachment.objects.count()
        response = upload(logged_in_client, conversation, data, "fuzz.png")
        assert response.status_code in (201, 400, 413), response.content
        outcomes[response.status_code] += 1
        if response.status_code == 201:
            attachment = Attachment.objects.get(pk=response.json()["file_id"])
            # Bytes that are readable text are a text document now (typed by content, not
            # by the name); anything else taken must be a whole image.
            if attachment.kind == Attachment.Kind.DOCUMENT:
                assert attachment.mime_type.startswith("text/") and attachment.page_count >= 1
            else:
                assert attachment.width > 0 and attachment.height > 0
            assert attachment.file.size == len(data)
            assert Attachment.objects.count() == before + 1
        else:
            assert response.json()["error"]["code"]
            assert Attachment.objects.count() == before
        assert len(stored_files(media_root)) == Attachment.objects.count()

    outcomes: Counter[int] = Counter()
    check()
    assert outcomes[400] > 0 and outcomes[201] > 0, outcomes  # both paths were exercised
