"""The image lifecycle (SPEC RV.4): pixels for the current turn and the newest K turns,
stored descriptions for the rest, described once; recall brings an old image back."""

from __future__ import annotations

import asyncio
import io
import json
import random

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image, PngImagePlugin

from chat import services
from chat.history import load_history, query_message
from chat.image_describer import can_describe, describe_images, store
from chat.images import descriptions as image_descriptions
from chat.images.descriptions import offline_description
from chat.models import Attachment, Message
from chat.recall.lookup import recall_passages
from chat.runs.storage import open_edit
from contextmgmt.core.image_tokens import image_part_tokens, tile_tokens
from contextmgmt.core.llm import LLMUnavailable
from contextmgmt.core.tokens import estimate_message_tokens
from contextmgmt.db_memory import DbMemory
from fimone.agent.tools import RecalledImage
from fimone.llm.offline.model import OfflineLLM
from tests.chat.images import image_bytes, note_waits_for_descriptions
from tests.support.fake_llm import FakeLLM, Hang

pytestmark = pytest.mark.django_db


def upload(user, conversation, name: str, data: bytes | None = None) -> Attachment:
    data = data or image_bytes("PNG")
    return services.attachment_create(
        owner=user,
        conversation=conversation,
        uploaded_file=SimpleUploadedFile(name, data, content_type="image/png"),
    )


def turns_with_images(user, conversation, count: int) -> list[Attachment]:
    """``count`` answered turns, each question with one image ``p0.png`` …, then a current
    question without one."""
    images = []
    for i in range(count):
        image = upload(user, conversation, f"p{i}.png")
        services.user_message_create(
            conversation=conversation, content=f"question {i}", attachments=[image]
        )
        Message.objects.create(conversation=conversation, role="assistant", content=f"answer {i}")
        images.append(image)
    services.user_message_create(conversation=conversation, content="current", attachments=[])
    return images


def pixel_questions(messages) -> list[str]:
    """The texts of the history messages that carry image parts."""
    return [m.text() for m in messages if isinstance(m.content, list)]


def png_with_text(colour=(20, 40, 160), size=(40, 20)) -> bytes:
    image = Image.new("RGB", size, colour)
    for x in range(size[0] // 4):
        for y in range(size[1]):
            image.putpixel((x, y), (250, 250, 250))
    info = PngImagePlugin.PngInfo()
    info.add_text("Title", "Quarterly revenue")
    info.add_itxt("Description", "Umsatz Q3 — €1.2M")
    out = io.BytesIO()
    image.save(out, format="PNG", pnginfo=info)
    return out.getvalue()


# --- pixels or text ---------------------------------------------------------------------------


def test_older_images_go_as_their_description_the_newest_two_turns_as_pixels_rv_4(
    user, conversation
):
    images = turns_with_images(user, conversation, 5)
    messages = load_history(conversation.pk).messages
    assert pixel_questions(messages) == ["question 3", "question 4"]
    oldest = messages[0]
    assert oldest.content == (
        "question 0\n[image: p0.png, 32x24 — PNG 32x24; mostly red #c8285a 100%]"
    )
    assert oldest.metadata["images_as_text"] == [str(images[0].pk)]
    assert "images_as_text" not in messages[-2].metadata  # question 4: pixels


@pytest.mark.parametrize("pixel_turns", [0, 1, 3, 10])
def test_the_pixel_turns_setting_is_honoured_rv_4(user, conversation, settings, pixel_turns):
    settings.FIMONE_IMAGE_PIXEL_TURNS = pixel_turns
    turns_with_images(user, conversation, 5)
    pixels = pixel_questions(load_history(conversation.pk).messages)
    assert pixels == [f"question {i}" for i in range(max(0, 5 - pixel_turns), 5)]


def test_the_current_query_keeps_its_pixels_even_with_no_pixel_turns_rv_4(
    user, conversation, settings
):
    settings.FIMONE_IMAGE_PIXEL_TURNS = 0
    image = upload(user, conversation, "now.png")
    asked = services.user_message_create(
        conversation=conversation, content="and this?", attachments=[image]
    )
    content = query_message(asked).content
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,")


def test_without_vision_no_pixels_are_sent_at_all_rv_4(user, conversation):
    turns_with_images(user, conversation, 3)
    image = upload(user, conversation, "now.png")
    asked = services.user_message_create(
        conversation=conversation, content="and this?", attachments=[image]
    )
    history = load_history(conversation.pk, vision=False).messages
    query = query_message(asked, vision=False)
    for message in [*history, query]:
        assert isinstance(message.content, str)
    assert query.content.startswith("and this?\n[image: now.png, 32x24 — PNG 32x24; mostly red")


def jpeg_with_long_exif(size=(1600, 900)) -> bytes:
    """A large JPEG whose size sits behind 20 kB of EXIF: past the first bytes a size is
    read from."""
    exif = Image.Exif()
    exif[0x010E] = "x" * 20_000  # ImageDescription
    out = io.BytesIO()
    noise = random.Random(0).randbytes(size[0] * size[1] * 3)  # incompressible: a big file
    Image.frombytes("RGB", size, noise).save(out, format="JPEG", exif=exif.tobytes())
    return out.getvalue()


@pytest.mark.parametrize("vision", [True, False])
def test_a_history_loaded_for_counting_estimates_as_the_one_sent_and_stores_nothing(
    user, conversation, settings, django_assert_max_num_queries, vision
):
    """The context gauge's load: each image part holds only the file's leading bytes, yet
    every message is estimated as the history a run sends — a JPEG whose size sits far into
    the file, a missing file (a note in both), an image never described (described in
    memory, not stored)."""
    settings.FIMONE_IMAGE_PIXEL_TURNS = 3
    turns_with_images(user, conversation, 1)
    Message.objects.filter(content="current").delete()
    jpeg = services.attachment_create(
        owner=user,
        conversation=conversation,
        uploaded_file=SimpleUploadedFile("wide.jpg", jpeg_with_long_exif(), "image/jpeg"),
    )
    gone = upload(user, conversation, "gone.png")
    gone.file.storage.delete(gone.file.name)
    legacy = upload(user, conversation, "legacy.png")
    Attachment.objects.filter(pk=legacy.pk).update(description="", description_source="")
    services.user_message_create(
        conversation=conversation, content="three", attachments=[jpeg, gone, legacy]
    )
    Message.objects.create(conversation=conversation, role="assistant", content="seen")

    with django_assert_max_num_queries(3):  # summary, messages, attachments: no write
        counted = load_history(conversation.pk, vision=vision, for_count=True).messages
    assert Attachment.objects.get(pk=legacy.pk).description_source == ""
    sent = load_history(conversation.pk, vision=vision).messages

    assert [m.text() for m in counted] == [m.text() for m in sent]
    assert [len(m.image_parts()) for m in counted] == [len(m.image_parts()) for m in sent]
    assert [estimate_message_tokens(m) for m in counted] == [
        estimate_message_tokens(m) for m in sent
    ]
    if vision:
        assert [len(m.image_parts()) for m in sent] == [1, 0, 2, 0]
        assert "[image: gone.png unavailable]" in sent[2].text()
        assert image_part_tokens(sent[2].image_parts()[0]) == tile_tokens(1600, 900)
        assert len(json.dumps(counted[2].content)) < len(json.dumps(sent[2].content)) / 2


def test_db_memory_fits_a_screenshot_heavy_history_without_compacting_rv_4(
    user, conversation, settings
):
    """Ten 1920x1080 screenshots cost 1,105 tokens each by the tile rule: re-sent, they
    overflow a 4,000-token budget; under the lifecycle only two travel as pixels."""
    for i in range(10):
        shot = upload(user, conversation, f"shot{i}.png", image_bytes("PNG", (1920, 1080)))
        services.user_message_create(
            conversation=conversation, content=f"error {i}?", attachments=[shot]
        )
        Message.objects.create(conversation=conversation, role="assistant", content="Fixed.")
    services.user_message_create(conversation=conversation, content="current")

    memory = DbMemory(conversation.pk, 4_000, vision=True)
    messages = async_to_sync(memory.get_messages)()
    assert not memory.was_compacted and len(messages) == 20
    assert 2 * 1105 < memory.last.tokens_after < 4_000

    settings.FIMONE_IMAGE_PIXEL_TURNS = 10  # the reference behaviour: every image re-sent
    resent = DbMemory(conversation.pk, 4_000, vision=True)
    async_to_sync(resent.get_messages)()
    assert resent.was_compacted and resent.last.tokens_before > 10 * 1105


# --- described once ---------------------------------------------------------------------------


def test_an_upload_is_described_once_and_requests_reuse_it(user, conversation, monkeypatch):
    images = turns_with_images(user, conversation, 4)
    assert images[0].description_source == "offline"
    assert images[0].description == "PNG 32x24; mostly red #c8285a 100%"

    def forbidden(data):
        raise AssertionError("described again")

    monkeypatch.setattr(image_descriptions, "offline_description", forbidden)
    for _request in range(2):
        messages = load_history(conversation.pk).messages
        assert "mostly red #c8285a" in messages[0].text()


def test_an_image_stored_before_descriptions_is_described_on_first_use_only(
    user, conversation, monkeypatch, django_assert_max_num_queries
):
    images = turns_with_images(user, conversation, 4)
    Attachment.objects.filter(pk__in=[i.pk for i in images]).update(
        description="", description_source=""
    )
    calls = []
    real = image_descriptions.offline_description
    monkeypatch.setattr(
        image_descriptions, "offline_description", lambda data: calls.append(1) or real(data)
    )
    first = load_history(conversation.pk).messages
    assert len(calls) == 4
    assert "— PNG 32x24; mostly red" in first[0].text()
    with django_assert_max_num_queries(3):  # summary, messages, attachments: no write
        again = load_history(conversation.pk).messages
    assert len(calls) == 4
    assert again[0].content == first[0].content


def test_brackets_in_a_description_cannot_end_the_note_early(user, conversation):
    [image] = turns_with_images(user, conversation, 1)
    Attachment.objects.filter(pk=image.pk).update(description="a [draft] chart]")
    [question, _answer] = load_history(conversation.pk, pixel_turns=0).messages
    assert question.text() == "question 0\n[image: p0.png, 32x24 — a (draft) chart)]"


def test_offline_description_names_size_format_colours_and_text_layer_rv_4():
    data = png_with_text()
    text = offline_description(data)
    assert text == (
        "PNG 40x20; mostly dark blue #1428a0 75%, white #fafafa 25%; text in the file: "
        '"Title: Quarterly revenue" | "Description: Umsatz Q3 — €1.2M"'
    )
    assert offline_description(data) == text  # deterministic


def test_offline_description_reads_jpeg_exif_and_comments():
    exif = Image.Exif()
    exif[0x010E] = "Receipt, hardware store"  # ImageDescription
    exif[0x9C9C] = "Paid in cash".encode("utf-16-le")  # XPComment
    out = io.BytesIO()
    Image.new("RGB", (30, 10), (240, 220, 30)).save(
        out, format="JPEG", exif=exif.tobytes(), comment=b"scanned 2026"
    )
    text = offline_description(out.getvalue())
    assert text.startswith("JPEG 30x10; mostly yellow")
    assert '"scanned 2026" | "Receipt, hardware store" | "Paid in cash"' in text


@pytest.mark.parametrize("data", [b"not an image", image_bytes("PNG", noise=True)[:200]])
def test_an_undecodable_file_gets_a_description_that_says_so(data):
    assert offline_description(data).startswith("undecodable image (")


def test_a_damaged_stored_file_becomes_text_not_an_error(user, conversation):
    images = turns_with_images(user, conversation, 3)
    broken = images[0]
    Attachment.objects.filter(pk=broken.pk).update(description="", description_source="")
    broken.file.storage.delete(broken.file.name)
    broken.file.storage.save(broken.file.name, ContentFile(b"garbage bytes"))
    oldest = load_history(conversation.pk).messages[0]
    assert "[image: p0.png, 32x24 — undecodable image (13 bytes)" in oldest.text()


# --- recall ----------------------------------------------------------------------------------


def test_recall_finds_an_old_image_by_its_description_and_brings_its_pixels_rv_4(
    user, conversation
):
    receipt = upload(user, conversation, "receipt.png", png_with_text())
    services.user_message_create(
        conversation=conversation, content="keep this", attachments=[receipt]
    )
    turns_with_images(user, conversation, 3)
    current = Message.objects.filter(conversation=conversation).order_by("-id").first()

    found = recall_passages(
        conversation_id=conversation.pk, query="revenue", before_id=current.pk, vision=True
    )
    images = [f for f in found if isinstance(f, RecalledImage)]
    assert len(images) == 1
    assert "[image: receipt.png, 40x20 — PNG 40x20; mostly dark blue" in images[0].label
    assert images[0].part["image_url"]["url"].startswith("data:image/png;base64,")

    blind = recall_passages(
        conversation_id=conversation.pk, query="revenue", before_id=current.pk, vision=False
    )
    assert [f.part for f in blind if isinstance(f, RecalledImage)] == [None]


def test_recall_asked_for_a_screenshot_returns_the_newest_images_only_of_this_conversation(
    user, conversation, foreign_conversation, other_user
):
    upload(other_user, foreign_conversation, "secret.png")
    turns_with_images(user, conversation, 3)
    found = recall_passages(conversation_id=conversation.pk, query="the screenshot", vision=True)
    labels = [f.label for f in found if isinstance(f, RecalledImage)]
    assert len(labels) == 2
    assert "p2.png" in labels[0] and "p1.png" in labels[1]
    assert not any("secret" in label for label in labels)


def test_recall_does_not_resend_images_the_model_already_sees_as_pixels(user, conversation):
    turns_with_images(user, conversation, 5)
    current = Message.objects.filter(conversation=conversation).order_by("-id").first()
    found = recall_passages(
        conversation_id=conversation.pk, query="image", before_id=current.pk, vision=True
    )
    labels = [f.label for f in found if isinstance(f, RecalledImage)]
    # p3 and p4 travel as pixels already (the two newest turns): the newest others come.
    assert ["p2.png" in labels[0], "p1.png" in labels[1]] == [True, True]


def test_recall_finds_the_image_of_an_edited_question_but_not_the_query_own(user, conversation):
    receipt = upload(user, conversation, "receipt.png", png_with_text())
    services.user_message_create(conversation=conversation, content="sum?", attachments=[receipt])
    Message.objects.create(conversation=conversation, role="assistant", content="12")
    edited = open_edit(
        user=user,
        conversation_id=conversation.pk,
        message_id=Message.objects.get(content="sum?").pk,
        content="total?",
        run_id="r1",
    )

    # The edited copy is the run's query: its image travels as pixels already.
    def images(vision: bool) -> list:
        found = recall_passages(
            conversation_id=conversation.pk,
            query="revenue",
            before_id=edited.query.pk,
            vision=vision,
        )
        return [f for f in found if isinstance(f, RecalledImage)]

    assert len(images(vision=False)) == 1 and images(vision=True) == []
    services.user_message_create(conversation=conversation, content="later", attachments=[])
    later = Message.objects.filter(conversation=conversation, content="later").get()
    found = recall_passages(
        conversation_id=conversation.pk, query="revenue", before_id=later.pk, vision=False
    )
    assert [f.label for f in found if isinstance(f, RecalledImage)][0].endswith(
        'text in the file: "Title: Quarterly revenue" | "Description: Umsatz Q3 — €1.2M"]'
    )


# --- the fast model's description -------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_a_failed_model_description_keeps_the_offline_one_and_is_not_retried(
    user, conversation
):
    images = await sync_to_async(turns_with_images)(user, conversation, 3)
    ids = [str(i.pk) for i in images]
    llm = FakeLLM().enqueue(LLMUnavailable("down"), Hang(), "A red square.")
    assert await describe_images(llm, ids, time_limit=0.5) == 1
    rows = {
        a.original_name: (a.description_source, a.description)
        async for a in Attachment.objects.filter(pk__in=ids)
    }
    # Newest first: p2 failed, p1 timed out, p0 got the model's words.
    assert rows["p0.png"] == ("model", "A red square.")
    for name in ("p1.png", "p2.png"):
        assert rows[name] == ("model_failed", "PNG 32x24; mostly red #c8285a 100%")
    assert await describe_images(llm, ids, time_limit=0.5) == 0  # nobody is asked again
    assert len(llm.calls) == 3
    assert can_describe(OfflineLLM()) is False and can_describe(FakeLLM()) is False


@pytest.mark.django_db(transaction=True)
async def test_two_callers_describing_the_same_images_make_one_call_each_and_both_count_it(
    user, conversation, monkeypatch
):
    """The next run's preparation, started while a description made after the previous
    answer is under way, waits for that call instead of asking the model again."""
    images = await sync_to_async(turns_with_images)(user, conversation, 2)
    ids = [str(i.pk) for i in images]
    release, waiting = asyncio.Event(), note_waits_for_descriptions(monkeypatch)

    class Gated(FakeLLM):
        async def chat(self, messages, *, tools=None, **opts):
            result = await super().chat(messages, tools=tools, **opts)
            await release.wait()
            return result

    llm = Gated(default="A red square.")
    first = asyncio.create_task(describe_images(llm, ids, time_limit=30))
    second = asyncio.create_task(describe_images(llm, ids, time_limit=30))
    async with asyncio.timeout(30):
        await waiting.wait()
    release.set()
    assert await first == 2 and await second == 2
    assert len(llm.calls) == 2  # one per image
    assert {a.description_source async for a in Attachment.objects.filter(pk__in=ids)} == {"model"}


@pytest.mark.django_db(transaction=True)
async def test_a_model_description_is_never_overwritten_and_a_failure_may_mark_nothing(
    user, conversation
):
    old, new = await sync_to_async(turns_with_images)(user, conversation, 2)
    await sync_to_async(store)(old.pk, "First words.")
    await sync_to_async(store)(old.pk, "Second words.")
    await sync_to_async(store)(old.pk, None)
    stored = await Attachment.objects.aget(pk=old.pk)
    assert (stored.description_source, stored.description) == ("model", "First words.")

    llm = FakeLLM().enqueue(LLMUnavailable("down"))
    assert await describe_images(llm, [str(new.pk)], time_limit=0.5, mark_failures=False) == 0
    assert (await Attachment.objects.aget(pk=new.pk)).description_source == "offline"
