"""Image upload validation with Pillow.

The content decides what a file is, never its name or the client's content type. A file is
accepted only if Pillow, restricted to the four allowed formats, can open it, verify it,
reopen it within the pixel limit and decode it completely.
"""

from __future__ import annotations

import hashlib
import io
import os
import warnings
from dataclasses import dataclass

from django.core.exceptions import SuspiciousFileOperation
from django.core.files.uploadedfile import UploadedFile
from django.utils.text import get_valid_filename
from django.utils.translation import gettext
from PIL import Image, UnidentifiedImageError

from chat.errors import UploadRejected

# Pillow format name -> the mime type we store and serve.
ALLOWED_FORMATS: dict[str, str] = {
    "PNG": "image/png",
    "JPEG": "image/jpeg",
    "WEBP": "image/webp",
    "GIF": "image/gif",
}


_EXIF_ORIENTATION = 0x0112
_QUARTER_TURNS = {5, 6, 7, 8}  # transpose, rotate 270, transverse, rotate 90


@dataclass(frozen=True)
class ValidatedImage:
    data: bytes
    mime_type: str
    width: int
    height: int
    size: int
    sha256: str


def read_limited(uploaded_file: UploadedFile, *, max_bytes: int) -> bytes:
    """The file's bytes, refusing anything over ``max_bytes`` without reading it all."""
    if uploaded_file.size is not None and uploaded_file.size > max_bytes:
        raise _too_large(max_bytes)
    uploaded_file.seek(0)
    data = uploaded_file.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _too_large(max_bytes)
    return data


def validate_image(data: bytes, *, max_pixels: int) -> ValidatedImage:
    """Check that ``data`` is a complete PNG/JPEG/WebP/GIF within ``max_pixels``."""
    if not data:
        raise UploadRejected("empty_file", gettext("The file is empty."))
    formats = list(ALLOWED_FORMATS)
    # Pillow warns (DecompressionBombWarning) above its own limit and raises above twice
    # that; turning warnings into errors makes both a rejection instead of a log line.
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            with Image.open(io.BytesIO(data), formats=formats) as probe:
                probe.verify()
            with Image.open(io.BytesIO(data), formats=formats) as image:
                width, height = image.size
                if width <= 0 or height <= 0:
                    raise UploadRejected("invalid_image", gettext("The image has no pixels."))
                if width * height > max_pixels:
                    raise _too_many_pixels(width, height, max_pixels)
                fmt = image.format
                # verify() does not decode pixel data; load() does, and fails on a
                # truncated file (Pillow's LOAD_TRUNCATED_IMAGES stays off).
                image.load()
                # Phones store portraits as landscape pixels plus an EXIF orientation that
                # viewers (and ImageOps.exif_transpose) apply: report the size people see.
                if image.getexif().get(_EXIF_ORIENTATION) in _QUARTER_TURNS:
                    width, height = height, width
        except UploadRejected:
            raise
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise UploadRejected(
                "image_too_large", gettext("The image has too many pixels."), status=413
            ) from exc
        except UnidentifiedImageError as exc:
            raise UploadRejected(
                "unsupported_type", gettext("The file is not a PNG, JPEG, WebP or GIF image.")
            ) from exc
        except (OSError, SyntaxError, ValueError, EOFError) as exc:
            # Pillow reports corrupt and truncated data through these.
            raise UploadRejected(
                "invalid_image", gettext("The image is damaged or incomplete.")
            ) from exc
    if fmt not in ALLOWED_FORMATS:  # defensive: open(formats=…) already restricts this
        raise UploadRejected(
            "unsupported_type", gettext("The file is not a PNG, JPEG, WebP or GIF image.")
        )
    return ValidatedImage(
        data=data,
        mime_type=ALLOWED_FORMATS[fmt],
        width=width,
        height=height,
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
    )


def display_name(client_name: str | None) -> str:
    """The client's file name reduced to a harmless label (it never reaches the disk)."""
    base = os.path.basename((client_name or "").replace("\\", "/"))
    try:
        name = get_valid_filename(base)
    except SuspiciousFileOperation:  # names like ".." — just drop them
        return ""
    return name[-255:]


def _too_large(max_bytes: int) -> UploadRejected:
    return UploadRejected(
        "file_too_large",
        gettext("The file is larger than %(limit)s bytes.") % {"limit": f"{max_bytes:,}"},
        status=413,
    )


def _too_many_pixels(width: int, height: int, max_pixels: int) -> UploadRejected:
    return UploadRejected(
        "image_too_large",
        gettext("The image is %(width)d×%(height)d pixels; the limit is %(limit)s pixels.")
        % {"width": width, "height": height, "limit": f"{max_pixels:,}"},
        status=413,
    )
