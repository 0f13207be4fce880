"""What an image is, in words: the text that stands in for it once it is no longer sent.

Every image gets one description, stored on its attachment (``description``,
``description_source``) and never recomputed per request (docs/architecture.md, "Images"):

- ``offline``: written from the file itself at upload (or, for an image uploaded before
  descriptions existed, the first time a history needs it): format, size, the dominant
  colours, and any text layer Pillow can read (PNG tEXt/iTXt/zTXt chunks, a JPEG/GIF
  comment, EXIF ImageDescription, XPTitle/XPComment/XPSubject, UserComment). Deterministic:
  the same file gives the same words. A file Pillow cannot decode gets a description that
  says so, never an exception;
- ``model``: written once by the fast model when its configuration can see images, in the
  run that first sends the image as text (``chat.image_describer``);
- ``model_failed``: the model was asked and failed; the offline description stays and the
  model is not asked again.

Sync (Pillow, file reads): call it from a thread.
"""

from __future__ import annotations

import io
import logging
import re
import warnings
from collections.abc import Iterable

from PIL import Image, UnidentifiedImageError

from chat.models import Attachment

logger = logging.getLogger(__name__)

TEXT_LAYER_CHARS = 300
_COLOURS = 3
_MIN_SHARE_PERCENT = 5  # a colour on fewer pixels is not "dominant"
_SAMPLE = 64  # the image is reduced to this many pixels a side before counting colours
# EXIF tags holding a description a camera, phone or editor wrote.
_EXIF_DESCRIPTION = 0x010E
_EXIF_USER_COMMENT = 0x9286
_EXIF_IFD = 0x8769
_XP_TAGS = (0x9C9B, 0x9C9C, 0x9C9F)  # XPTitle, XPComment, XPSubject (UTF-16LE)
# PNG text keys that carry a picture's words (others: software, dates, dimensions…).
_SKIPPED_TEXT_KEYS = {"software", "creation time", "dpi", "xml:com.adobe.xmp", "raw profile type"}

# Reference colours and their names; a pixel cluster is named by the nearest one.
_NAMED = (
    ("black", (0, 0, 0)),
    ("dark grey", (64, 64, 64)),
    ("grey", (128, 128, 128)),
    ("light grey", (192, 192, 192)),
    ("white", (255, 255, 255)),
    ("red", (220, 30, 30)),
    ("dark red", (128, 0, 0)),
    ("orange", (255, 140, 0)),
    ("yellow", (240, 220, 30)),
    ("olive", (128, 128, 0)),
    ("green", (40, 170, 60)),
    ("dark green", (0, 90, 0)),
    ("teal", (0, 128, 128)),
    ("cyan", (0, 220, 230)),
    ("light blue", (120, 180, 240)),
    ("blue", (30, 80, 220)),
    ("dark blue", (20, 40, 150)),
    ("navy", (0, 0, 90)),
    ("purple", (128, 40, 160)),
    ("pink", (240, 130, 190)),
    ("magenta", (230, 0, 200)),
    ("brown", (130, 80, 30)),
    ("beige", (225, 205, 160)),
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]+")
_SPACES = re.compile(r"\s+")


def offline_description(data: bytes) -> str:
    """Format, size, dominant colours and text layer of an image file, in one line."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(io.BytesIO(data)) as image:
                fmt = image.format or "image"
                width, height = image.size
                texts = text_layer(image)
                colours = dominant_colours(image)
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError) as exc:
        return f"undecodable image ({len(data):,} bytes): {type(exc).__name__}"
    except Image.DecompressionBombError:
        return f"image too large to decode ({len(data):,} bytes)"
    parts = [f"{fmt} {width}x{height}"]
    if colours:
        parts.append("mostly " + ", ".join(colours))
    if texts:
        parts.append("text in the file: " + " | ".join(f'"{t}"' for t in texts))
    return "; ".join(parts)


def dominant_colours(image: Image.Image, count: int = _COLOURS) -> list[str]:
    """The ``count`` most common colours as "name #rrggbb NN%", most common first.

    Shrinks ``image`` in place first (JPEG decodes at a reduced scale): pass a copy to keep it.
    """
    # Nearest-neighbour: no blended edge colours that the picture does not have.
    image.thumbnail((_SAMPLE, _SAMPLE), resample=Image.Resampling.NEAREST)
    sample = image.convert("RGB")
    # Median cut, then count: deterministic for the same pixels.
    quantised = sample.quantize(colors=8, method=Image.Quantize.MEDIANCUT)
    palette = quantised.getpalette() or []
    found = sorted(quantised.getcolors() or [], key=lambda c: (-c[0], c[1]))
    pixels = sum(n for n, _ in found) or 1
    shares: dict[str, tuple[int, tuple[int, ...]]] = {}
    for n, index in found:
        if not isinstance(index, int):
            continue  # a palette image counts palette indexes; never anything else
        rgb = tuple(palette[index * 3 : index * 3 + 3])
        name = _nearest_name(rgb)
        seen = shares.get(name)
        shares[name] = (seen[0] + n, seen[1]) if seen else (n, rgb)
    ranked = sorted(shares.items(), key=lambda item: -item[1][0])
    return [
        f"{name} #{rgb[0]:02x}{rgb[1]:02x}{rgb[2]:02x} {round(100 * n / pixels)}%"
        for name, (n, rgb) in ranked[:count]
        if n * 100 >= pixels * _MIN_SHARE_PERCENT
    ]


def _nearest_name(rgb: tuple[int, ...]) -> str:
    r, g, b = rgb[:3]
    return min(
        _NAMED,
        key=lambda item: (r - item[1][0]) ** 2 + (g - item[1][1]) ** 2 + (b - item[1][2]) ** 2,
    )[0]


def text_layer(image: Image.Image) -> list[str]:
    """Text the file carries besides its pixels (metadata chunks and tags), cleaned."""
    found: list[str] = []
    chunks = getattr(image, "text", None)  # PNG tEXt/iTXt/zTXt
    if isinstance(chunks, dict):
        for key, value in chunks.items():
            if str(key).lower() not in _SKIPPED_TEXT_KEYS:
                found.append(f"{key}: {value}" if key.lower() not in ("comment",) else value)
    comment = image.info.get("comment")  # JPEG COM, GIF comment extension
    if comment:
        found.append(_as_text(comment))
    exif: Image.Exif | None
    try:
        exif = image.getexif()
    except Exception:  # a broken EXIF block is no reason to lose the rest
        exif = None
    if exif:
        if exif.get(_EXIF_DESCRIPTION):
            found.append(_as_text(exif[_EXIF_DESCRIPTION]))
        for tag in _XP_TAGS:
            if exif.get(tag):
                found.append(_utf16(exif[tag]))
        try:
            user_comment = exif.get_ifd(_EXIF_IFD).get(_EXIF_USER_COMMENT)
        except Exception:
            user_comment = None
        if user_comment:
            found.append(_user_comment(user_comment))
    cleaned: list[str] = []
    total = 0
    for text in found:
        text = _SPACES.sub(" ", _CONTROL.sub(" ", str(text))).strip()
        if not text or text in cleaned:
            continue
        text = text[: TEXT_LAYER_CHARS - total]
        cleaned.append(text)
        total += len(text)
        if total >= TEXT_LAYER_CHARS:
            break
    return cleaned


def _as_text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _utf16(value: object) -> str:
    if isinstance(value, tuple):  # Pillow may give the bytes as a tuple of ints
        value = bytes(value)
    if isinstance(value, bytes):
        return value.decode("utf-16-le", errors="replace").rstrip("\x00")
    return str(value)


def _user_comment(value: object) -> str:
    """EXIF UserComment: an 8-byte character-code header, then the text."""
    if isinstance(value, bytes):
        header, body = value[:8], value[8:]
        if header.startswith(b"UNICODE"):
            return body.decode("utf-16", errors="replace").rstrip("\x00")
        return body.decode("utf-8", errors="replace").rstrip("\x00")
    return str(value)


# --- stored on the attachment ----------------------------------------------------------------


def describe_offline(attachment: Attachment, data: bytes | None = None, *, store=True) -> str:
    """The offline description of ``attachment``: computed once, set on it, and stored
    (``store``) unless it already had one."""
    if attachment.description_source:
        return attachment.description
    if data is None:
        try:
            with attachment.file.open("rb") as fh:
                data = fh.read()
        except (OSError, ValueError) as exc:
            logger.warning("attachment %s unreadable: %s", attachment.pk, exc)
            data = b""
    if not data:
        return "image file unavailable"  # not stored: the file may come back (a restore)
    text = offline_description(data)
    if store:
        Attachment.objects.filter(pk=attachment.pk, description_source="").update(
            description=text, description_source=Attachment.DescriptionSource.OFFLINE
        )
    attachment.description = text
    attachment.description_source = Attachment.DescriptionSource.OFFLINE
    return text


def describe_missing(attachments: Iterable[Attachment], *, store: bool = True) -> None:
    """Offline descriptions for images uploaded before descriptions existed: computed
    once, set on the objects and (``store``) stored in one query (the next load finds them)."""
    missing = [a for a in attachments if not a.description_source]
    for attachment in missing:
        describe_offline(attachment, store=False)
    described = [a for a in missing if a.description_source]
    if described and store:
        Attachment.objects.bulk_update(described, ["description", "description_source"])
