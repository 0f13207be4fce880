"""Image uploads (issue 2, DESIGN §3): Pillow decides by content; a rejection stores nothing."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from chat import services
from chat.errors import InvalidInput, UploadRejected
from chat.images.uploads import display_name, validate_image
from chat.models import Attachment
from tests.chat.images import image_bytes, png_header_only

pytestmark = pytest.mark.django_db


def upload(client, conversation, data: bytes, name: str = "photo.png", mime: str = "image/png"):
    url = reverse("chat:attachment_upload", args=[conversation.id])
    return client.post(url, {"file": SimpleUploadedFile(name, data, content_type=mime)})


def stored_files(media_root) -> list:
    return [p for p in media_root.rglob("*") if p.is_file()]


def assert_rejected(response, media_root, status: int, code: str) -> None:
    assert response.status_code == status, response.content
    assert response.json()["error"]["code"] == code
    assert response.json()["error"]["message"]
    assert Attachment.objects.count() == 0
    assert stored_files(media_root) == []


@pytest.mark.parametrize(
    ("fmt", "mime"),
    [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("WEBP", "image/webp"), ("GIF", "image/gif")],
)
def test_each_allowed_format_is_accepted_and_described(
    logged_in_client, conversation, media_root, user, fmt, mime
):
    response = upload(logged_in_client, conversation, image_bytes(fmt, (40, 30)), name="a.img")
    assert response.status_code == 201, response.content
    body = response.json()
    attachment = Attachment.objects.get()
    assert body["file_id"] == str(attachment.id)
    assert (body["mime_type"], body["width"], body["height"]) == (mime, 40, 30)
    assert attachment.owner == user and attachment.conversation == conversation
    assert attachment.message is None
    assert len(attachment.sha256) == 64
    assert attachment.size == len(image_bytes(fmt, (40, 30)))
    assert stored_files(media_root) == [media_root / attachment.file.name]


def test_content_decides_the_type_not_the_name_or_client_mime(logged_in_client, conversation):
    response = upload(
        logged_in_client, conversation, image_bytes("PNG"), name="x.gif", mime="image/gif"
    )
    assert response.status_code == 201
    assert response.json()["mime_type"] == "image/png"
    assert Attachment.objects.get().file.name.endswith(".png")


def test_non_image_bytes_named_png_are_rejected(logged_in_client, conversation, media_root):
    # Not an image whatever its name: read as a document (HTML), which holds no text.
    response = upload(logged_in_client, conversation, b"<html><script>alert(1)</script>")
    assert_rejected(response, media_root, 400, "no_text")


def test_an_image_format_outside_the_allowlist_is_rejected(
    logged_in_client, conversation, media_root
):
    response = upload(logged_in_client, conversation, image_bytes("BMP"), name="a.bmp")
    assert_rejected(response, media_root, 400, "unsupported_type")


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_truncated_image_is_rejected(logged_in_client, conversation, media_root, fmt):
    data = image_bytes(fmt, (64, 64), noise=True)
    response = upload(logged_in_client, conversation, data[: len(data) // 2])
    assert_rejected(response, media_root, 400, "invalid_image")


def test_zero_byte_file_is_rejected(logged_in_client, conversation, media_root):
    response = upload(logged_in_client, conversation, b"")
    assert_rejected(response, media_root, 400, "empty_file")


def test_oversized_file_is_rejected_with_413(logged_in_client, conversation, media_root, settings):
    data = image_bytes("PNG", (64, 64), noise=True)
    settings.FIMONE_MAX_UPLOAD_BYTES = len(data) - 1
    response = upload(logged_in_client, conversation, data)
    assert_rejected(response, media_root, 413, "file_too_large")


def test_file_exactly_at_the_size_limit_is_accepted(logged_in_client, conversation, settings):
    data = image_bytes("PNG", (64, 64), noise=True)
    settings.FIMONE_MAX_UPLOAD_BYTES = len(data)
    assert upload(logged_in_client, conversation, data).status_code == 201


def test_image_over_the_configured_pixel_limit_is_rejected(
    logged_in_client, conversation, media_root, settings
):
    settings.FIMONE_MAX_IMAGE_PIXELS = 40 * 30 - 1
    response = upload(logged_in_client, conversation, image_bytes("PNG", (40, 30)))
    assert_rejected(response, media_root, 413, "image_too_large")


@pytest.mark.parametrize(
    "size",
    [
        (10_000, 10_000),  # above Pillow's warning threshold (~89M pixels)
        (50_000, 50_000),  # above Pillow's hard limit: DecompressionBombError
    ],
)
def test_decompression_bomb_is_rejected_even_with_a_generous_setting(
    logged_in_client, conversation, media_root, settings, size
):
    settings.FIMONE_MAX_IMAGE_PIXELS = 10**12  # our limit out of the way: Pillow's must hold
    data = png_header_only(*size)
    assert len(data) < 200
    response = upload(logged_in_client, conversation, data)
    assert_rejected(response, media_root, 413, "image_too_large")


def test_decompression_bomb_is_rejected_by_the_default_pixel_limit(
    logged_in_client, conversation, media_root
):
    response = upload(logged_in_client, conversation, png_header_only(8_000, 8_000))
    assert_rejected(response, media_root, 413, "image_too_large")


def test_path_traversal_name_never_reaches_the_disk(
    logged_in_client, conversation, media_root, user
):
    response = upload(logged_in_client, conversation, image_bytes("PNG"), name="../../x.png")
    assert response.status_code == 201
    attachment = Attachment.objects.get()
    assert attachment.file.name == f"attachments/{user.pk}/{attachment.id}.png"
    assert attachment.original_name == "x.png"
    (stored,) = stored_files(media_root)
    assert stored.resolve().is_relative_to(media_root.resolve())
    assert not (media_root.parent / "x.png").exists()


def test_missing_file_field_is_a_clear_400(logged_in_client, conversation):
    url = reverse("chat:attachment_upload", args=[conversation.id])
    response = logged_in_client.post(url, {"other": "x"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "missing_file"


def test_service_refuses_a_conversation_of_another_owner(other_user, conversation, media_root):
    uploaded = SimpleUploadedFile("a.png", image_bytes("PNG"), content_type="image/png")
    with pytest.raises(InvalidInput) as excinfo:
        services.attachment_create(
            owner=other_user, conversation=conversation, uploaded_file=uploaded
        )
    assert excinfo.value.code == "conversation_mismatch"
    assert Attachment.objects.count() == 0 and stored_files(media_root) == []


def test_validate_image_reports_dimensions_and_hash():
    data = image_bytes("WEBP", (7, 5))
    image = validate_image(data, max_pixels=35)
    assert (image.mime_type, image.width, image.height, image.size) == (
        "image/webp",
        7,
        5,
        len(data),
    )
    with pytest.raises(UploadRejected) as excinfo:
        validate_image(data, max_pixels=34)
    assert excinfo.value.code == "image_too_large"


@pytest.mark.parametrize(
    ("client_name", "expected"),
    [
        ("../../x.png", "x.png"),
        ("..\\..\\evil.png", "evil.png"),
        ("/etc/passwd", "passwd"),
        ("..", ""),
        ("", ""),
        (None, ""),
        ("my photo.png", "my_photo.png"),
    ],
)
def test_display_name_strips_directories(client_name, expected):
    assert display_name(client_name) == expected
