"""DbMemory on a real database (SPEC R4.1-R4.4).

get_messages() is driven through async_to_sync from sync tests: its sync_to_async ORM work
then runs on the test's own thread and connection, so the test transaction and
django_assert_max_num_queries both see it.
"""

from __future__ import annotations

import base64
import io
import uuid
from dataclasses import asdict

import pytest
from asgiref.sync import async_to_sync
from django.core.files.base import ContentFile
from PIL import Image

from chat.compaction.summaries import summary_latest, summary_save
from chat.history import load_history
from chat.images.descriptions import offline_description
from chat.models import Attachment, Conversation, Message
from contextmgmt.core.compact import DEFAULT_WINDOW_TOKENS, CompactUtils
from contextmgmt.core.llm import LLMUnavailable
from contextmgmt.core.messages import SUMMARY_PREFIX
from contextmgmt.db_memory import DbMemory, StoredSummary
from tests.support.factories import add_message
from tests.support.fake_llm import FakeLLM

pytestmark = pytest.mark.usefixtures("media_root")  # images are stored

BIG = 10**9  # a budget nothing exceeds


def png(size=(8, 6), colour=(10, 200, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, format="PNG")
    return out.getvalue()


def stored_image(
    conversation, *, name="cat.png", data=None, size=(8, 6), described=True
) -> Attachment:
    """An attachment as an upload stores it (described, unless ``described`` is False: an
    image uploaded before descriptions existed)."""
    data = data if data is not None else png(size)
    attachment = Attachment(
        owner=conversation.owner,
        conversation=conversation,
        original_name=name,
        mime_type="image/png",
        size=len(data),
        width=size[0],
        height=size[1],
        sha256="0" * 64,
    )
    if described and data:
        attachment.description = offline_description(data)
        attachment.description_source = Attachment.DescriptionSource.OFFLINE
    attachment.file.save("upload", ContentFile(data), save=False)
    attachment.save()
    return attachment


def image_refs(*attachments) -> dict:
    return {"images": [{"file_id": str(a.id), "mime_type": a.mime_type} for a in attachments]}


def load(memory: DbMemory):
    return async_to_sync(memory.get_messages)()


@pytest.fixture
def ten_turn_conversation(conversation) -> Conversation:
    """Five question/answer pairs, then the current query (pending)."""
    for i in range(5):
        add_message(conversation, "user", f"question {i}", status="done")
        add_message(conversation, "assistant", f"answer {i}")
    add_message(conversation, "user", "the current query", status="pending", pinned=True)
    return conversation


# --- loading: order, trailing query, what counts as context ---------------------------------


@pytest.mark.django_db
def test_history_in_creation_order_without_the_current_query(ten_turn_conversation):
    # R4.3 steps 1 and 2
    messages = load(DbMemory(ten_turn_conversation.id, max_tokens=BIG))
    assert [(m.role, m.content) for m in messages] == [
        (role, f"{word} {i}")
        for i in range(5)
        for role, word in (("user", "question"), ("assistant", "answer"))
    ]
    ids = list(
        Message.objects.filter(conversation=ten_turn_conversation)
        .order_by("created_at", "id")
        .values_list("id", flat=True)
    )
    assert [m.metadata["id"] for m in messages] == ids[:-1]
    assert all(m.metadata["created_at"] for m in messages)
    assert not any(m.pinned for m in messages)  # history is never pinned (RR.3)


@pytest.mark.django_db
def test_order_follows_created_at_not_insertion(conversation):
    late = add_message(conversation, "user", "second")
    early = add_message(conversation, "user", "first")
    Message.objects.filter(pk=early.pk).update(created_at=late.created_at.replace(year=2000))
    add_message(conversation, "user", "current")
    assert [m.content for m in load(DbMemory(conversation.id, BIG))] == ["first", "second"]


@pytest.mark.django_db
def test_only_a_trailing_user_message_is_dropped(conversation):
    add_message(conversation, "user", "q")
    add_message(conversation, "assistant", "a")
    assert [m.content for m in load(DbMemory(conversation.id, BIG))] == ["q", "a"]


@pytest.mark.django_db
def test_failed_answer_is_dropped_but_its_question_kept(conversation):
    add_message(conversation, "user", "what is 2+2?", status="done")
    add_message(conversation, "assistant", "LLM unavailable", kind="error", status="error")
    add_message(conversation, "user", "retry please", status="pending")
    messages = load(DbMemory(conversation.id, BIG))
    assert [(m.role, m.content) for m in messages] == [("user", "what is 2+2?")]


@pytest.mark.django_db
def test_cancelled_partial_answer_kept_running_and_empty_ones_dropped(conversation):
    add_message(conversation, "user", "write a poem")
    add_message(conversation, "assistant", "Roses are", status="cancelled")
    add_message(conversation, "assistant", "", status="done")
    add_message(conversation, "user", "go on")
    add_message(conversation, "assistant", "", status="running")  # the current run's own answer
    messages = load(DbMemory(conversation.id, BIG))
    assert [m.content for m in messages] == ["write a poem", "Roses are"]


@pytest.mark.django_db
def test_system_and_tool_rows_and_other_conversations_are_not_loaded(conversation, user):
    other = Conversation.objects.create(owner=user)
    add_message(other, "user", "elsewhere")
    add_message(conversation, "system", "internal note", kind="answer")
    add_message(conversation, "user", "mine")
    add_message(conversation, "assistant", "reply")
    assert [m.content for m in load(DbMemory(conversation.id, BIG))] == ["mine", "reply"]


@pytest.mark.django_db
def test_empty_conversation_gives_no_messages(conversation):
    memory = DbMemory(conversation.id, BIG)
    assert load(memory) == []
    assert (memory.was_compacted, memory.original_count, memory.compacted_count) == (False, 0, 0)


@pytest.mark.django_db
def test_add_message_and_clear_are_no_ops(ten_turn_conversation):
    # R4.2: read-only
    memory = DbMemory(ten_turn_conversation.id, BIG)
    before = Message.objects.count()
    messages = load(memory)
    async_to_sync(memory.add_message)(messages[0])
    async_to_sync(memory.clear)()
    assert Message.objects.count() == before
    assert len(load(memory)) == len(messages)


# --- images (R4.3 step 3) -----------------------------------------------------------------


@pytest.mark.django_db
def test_images_rebuilt_as_data_urls_from_storage(conversation):
    data = png((5, 4), (1, 2, 3))
    cat = stored_image(conversation, data=data, size=(5, 4))
    add_message(conversation, "user", "look at this", metadata=image_refs(cat))
    add_message(conversation, "assistant", "a cat")
    add_message(conversation, "user", "current")
    first = load(DbMemory(conversation.id, BIG, vision=True))[0]
    assert first.content[0] == {"type": "text", "text": "look at this"}
    url = first.content[1]["image_url"]["url"]
    assert url == "data:image/png;base64," + base64.b64encode(data).decode()
    assert first.to_openai()["content"][1]["type"] == "image_url"


@pytest.mark.django_db
def test_image_only_message_has_just_the_image_part(conversation):
    cat = stored_image(conversation)
    add_message(conversation, "user", "", metadata=image_refs(cat))
    add_message(conversation, "assistant", "ok")
    [image_msg, _] = load(DbMemory(conversation.id, BIG))
    assert [p["type"] for p in image_msg.content] == ["image_url"]


@pytest.mark.django_db
def test_without_vision_images_become_text_notes(conversation):
    cat = stored_image(conversation, name="cat.png", size=(640, 480))
    add_message(conversation, "user", "look", metadata=image_refs(cat))
    add_message(conversation, "assistant", "ok")
    first = load(DbMemory(conversation.id, BIG, vision=False))[0]
    assert first.content == (
        "look\n[image: cat.png, 640x480 — PNG 640x480; mostly green #0ac81e 100%]"
    )


@pytest.mark.django_db
def test_missing_file_degrades_to_a_note(conversation):
    cat = stored_image(conversation, name="gone.png")
    cat.file.storage.delete(cat.file.name)
    dog = stored_image(conversation, name="dog.png")
    add_message(conversation, "user", "two pets", metadata=image_refs(cat, dog))
    add_message(conversation, "assistant", "ok")
    first = load(DbMemory(conversation.id, BIG))[0]
    assert first.content[0] == {"type": "text", "text": "two pets\n[image: gone.png unavailable]"}
    assert first.content[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert len(first.content) == 2


@pytest.mark.django_db
def test_empty_file_degrades_to_a_note(conversation):
    blank = stored_image(conversation, name="blank.png", data=b"")
    add_message(conversation, "user", "x", metadata=image_refs(blank))
    add_message(conversation, "assistant", "ok")
    assert load(DbMemory(conversation.id, BIG))[0].content == "x\n[image: blank.png unavailable]"


@pytest.mark.django_db
def test_unknown_malformed_and_foreign_file_ids_degrade_to_notes(conversation, other_user):
    foreign_conv = Conversation.objects.create(owner=other_user)
    secret = stored_image(foreign_conv, name="secret.png")
    ghost = str(uuid.uuid4())
    refs = [
        {"file_id": ghost, "mime_type": "image/png"},
        {"file_id": "not-a-uuid", "mime_type": "image/png"},
        {"file_id": str(secret.id), "mime_type": "image/png"},  # another user's image
        "garbage",
    ]
    add_message(conversation, "user", "pics", metadata={"images": refs})
    add_message(conversation, "assistant", "ok")
    first = load(DbMemory(conversation.id, BIG))[0]
    assert first.content == (
        f"pics\n[image: {ghost} unavailable]\n[image: not-a-uuid unavailable]\n"
        f"[image: {secret.id} unavailable]"
    )
    assert "secret.png" not in first.content


# --- compaction and flags (R4.3 step 4, R4.4) -----------------------------------------------


def long_conversation(conversation, turns: int, words: int = 30, tag: str = "") -> list[Message]:
    """``turns`` question/answer pairs (about 85 tokens each at 30 words), then the query."""
    rows = []
    for i in range(turns):
        rows.append(add_message(conversation, "user", f"{tag}Q{i}: " + "lorem ipsum " * words))
        rows.append(add_message(conversation, "assistant", f"{tag}A{i}: " + "dolor sit " * words))
    add_message(conversation, "user", "current question")
    return rows


@pytest.mark.django_db
def test_within_budget_nothing_is_compacted(ten_turn_conversation):
    memory = DbMemory(ten_turn_conversation.id, BIG, compact_llm=FakeLLM())
    messages = load(memory)
    assert memory.was_compacted is False
    assert memory.last.strategy == "none"
    assert (memory.original_count, memory.compacted_count) == (10, 10)
    assert memory.last.result is None and memory.last.new_summary is None
    assert (
        memory.last.tokens_before
        == memory.last.tokens_after
        == (CompactUtils.estimate_messages_tokens(messages))
    )


@pytest.mark.django_db
def test_without_compact_llm_history_is_smart_truncated(conversation):
    long_conversation(conversation, turns=20)
    memory = DbMemory(conversation.id, max_tokens=400)
    messages = load(memory)
    assert memory.was_compacted and memory.last.strategy == "truncate"
    assert memory.original_count == 40
    assert memory.compacted_count == len(messages) < 40
    assert CompactUtils.estimate_messages_tokens(messages) <= 400
    assert messages[-1].content.startswith("A19:")  # the newest survive
    assert messages[0].role == "user"
    assert memory.last.new_summary is None


@pytest.mark.django_db
def test_with_compact_llm_history_is_summarised_and_a_summary_offered(conversation):
    rows = long_conversation(conversation, turns=20, words=45)
    llm = FakeLLM(default="The user asked twenty questions about lorem ipsum.")
    memory = DbMemory(conversation.id, max_tokens=600, compact_llm=llm, keep_recent=4)
    messages = load(memory)
    # More than one compactor window (4,000 tokens by default): summarised in rounds (RF.1).
    assert memory.last.tokens_before > DEFAULT_WINDOW_TOKENS
    assert len(llm.calls) == memory.last.result.summary_calls > 1
    assert memory.was_compacted and memory.last.strategy == "llm"
    assert messages[0].is_summary
    assert [m.metadata["id"] for m in messages[1:]] == [r.pk for r in rows[-4:]]
    assert (memory.original_count, memory.compacted_count) == (40, 5)
    assert memory.last.result.usage.input_tokens > 0
    new = memory.last.new_summary
    assert new.covers_through_id == rows[-5].pk
    assert new.covered_count == 36
    assert new.summary.startswith(SUMMARY_PREFIX)
    assert "twenty questions" in new.summary
    assert new.metadata["covered_tokens"] > 0


@pytest.mark.django_db
def test_failing_compact_llm_falls_back_to_truncation_without_a_summary(conversation):
    long_conversation(conversation, turns=20)
    llm = FakeLLM().enqueue(LLMUnavailable("down"))
    memory = DbMemory(conversation.id, max_tokens=400, compact_llm=llm)
    messages = load(memory)
    assert memory.last.strategy == "truncate" and memory.was_compacted
    assert "down" in memory.last.result.error
    assert memory.last.new_summary is None
    assert CompactUtils.estimate_messages_tokens(messages) <= 400


@pytest.mark.django_db
def test_flags_are_reset_on_each_load(conversation):
    long_conversation(conversation, turns=20)
    memory = DbMemory(conversation.id, max_tokens=400)
    load(memory)
    assert memory.was_compacted
    memory.max_tokens = BIG
    load(memory)
    assert (memory.was_compacted, memory.last.strategy, memory.last.result) == (False, "none", None)


# --- persisted summaries --------------------------------------------------------------------


def persist(conversation, memory: DbMemory):
    return summary_save(conversation_id=conversation.id, **asdict(memory.last.new_summary))


@pytest.mark.django_db
def test_next_load_starts_from_the_stored_summary_without_an_llm_call(conversation):
    rows = long_conversation(conversation, turns=20)
    first = DbMemory(conversation.id, 600, compact_llm=FakeLLM(default="Summary one."))
    load(first)
    persist(conversation, first)
    # The run answers and the user asks again.
    Message.objects.filter(role="user", content="current question").update(status="done")
    answer = add_message(conversation, "assistant", "answer to current")
    add_message(conversation, "user", "next question")

    llm = FakeLLM(default="must not be called")
    second = DbMemory(conversation.id, 600, compact_llm=llm)
    messages = load(second)
    assert llm.calls == []
    assert messages[0].is_summary and "Summary one." in messages[0].content
    assert [m.metadata["id"] for m in messages[1:]] == [r.pk for r in rows[-4:]] + [
        Message.objects.get(content="current question").pk,
        answer.pk,
    ]
    assert second.was_compacted and second.last.strategy == "summary"
    assert second.original_count == 36 + 6
    assert second.compacted_count == 7
    assert second.last.new_summary is None and second.last.result is None
    assert second.last.tokens_before > second.last.tokens_after


@pytest.mark.django_db
def test_summary_is_folded_into_the_next_one_when_history_outgrows_it(conversation):
    long_conversation(conversation, turns=20)
    first = DbMemory(conversation.id, 600, compact_llm=FakeLLM(default="Old facts: KEY-111."))
    load(first)
    persist(conversation, first)
    Message.objects.filter(content="current question").update(status="done")
    more = long_conversation(conversation, turns=10, tag="later-")

    llm = FakeLLM(default="New facts: KEY-111 and more.")
    second = DbMemory(conversation.id, 600, compact_llm=llm)
    messages = load(second)
    assert len(llm.calls) == 1
    transcript = llm.calls[0].messages[-1].text()
    assert "Old facts: KEY-111." in transcript  # the old summary is folded in, not piled up
    assert "user: Q0:" not in transcript  # covered messages are not sent again
    assert "user: later-Q0:" in transcript
    assert [m.is_summary for m in messages].count(True) == 1
    new = second.last.new_summary
    # 36 before; now the 4 kept + the old current query + 20 new, minus the 4 kept again.
    assert new.covered_count == 36 + 21
    assert new.covers_through_id == more[-5].pk
    persisted = persist(conversation, second)
    assert summary_latest(conversation_id=conversation.id) == persisted


@pytest.mark.django_db
def test_summaries_can_be_switched_off(conversation):
    long_conversation(conversation, turns=20)
    first = DbMemory(conversation.id, 600, compact_llm=FakeLLM(default="S."))
    load(first)
    persist(conversation, first)
    plain = DbMemory(conversation.id, BIG, use_summaries=False)
    messages = load(plain)
    assert len(messages) == 40 and not any(m.is_summary for m in messages)


@pytest.mark.django_db
def test_a_passed_summary_is_used_instead_of_a_query(conversation, django_assert_num_queries):
    rows = long_conversation(conversation, turns=3)
    given = StoredSummary(content="Given.", covers_through_id=rows[1].pk, covered_count=2)
    with django_assert_num_queries(1):
        result = load_history(conversation.id, summary=given)
    assert [m.metadata["id"] for m in result.messages] == [r.pk for r in rows[2:]]


# --- constant query count -----------------------------------------------------------------


def bulk_history(conversation, count: int, images: int) -> list[Message]:
    """``count`` alternating user/assistant messages; ``images`` user messages carry one image."""
    pictures = [stored_image(conversation, name=f"p{i}.png") for i in range(images)]
    user_slots = list(range(0, count, 2))
    with_image = set(user_slots[:: max(1, len(user_slots) // images)][:images]) if images else set()
    rows = []
    for i in range(count):
        role = "user" if i % 2 == 0 else "assistant"
        meta = image_refs(pictures.pop()) if i in with_image else {}
        rows.append(
            Message(
                conversation=conversation,
                role=role,
                content=f"message {i}",
                kind="query" if role == "user" else "answer",
                metadata=meta,
            )
        )
    assert not pictures  # every image is referenced
    return Message.objects.bulk_create(rows)


@pytest.mark.django_db
@pytest.mark.parametrize(("count", "images"), [(10, 0), (10, 2), (2_000, 20)])
def test_query_count_is_constant(
    conversation, django_assert_max_num_queries, settings, count, images
):
    settings.FIMONE_IMAGE_PIXEL_TURNS = count  # every image as pixels: each file is read
    bulk_history(conversation, count, images)
    add_message(conversation, "user", "current")
    memory = DbMemory(conversation.id, BIG, vision=True)
    # 1 summary + 1 messages + 1 attachments, whatever the size.
    with django_assert_max_num_queries(3):
        messages = load(memory)
    parts = [p for m in messages if isinstance(m.content, list) for p in m.content]
    assert sum(p["type"] == "image_url" for p in parts) == images
    assert memory.original_count == count


@pytest.mark.django_db
def test_query_count_is_constant_from_a_stored_summary(conversation, django_assert_max_num_queries):
    rows = bulk_history(conversation, 2_000, 20)
    add_message(conversation, "user", "current")
    summary_save(
        conversation_id=conversation.id,
        summary="First half.",
        covers_through_id=rows[999].pk,
        covered_count=1000,
    )
    memory = DbMemory(conversation.id, BIG)
    with django_assert_max_num_queries(3):
        messages = load(memory)
    assert len(messages) == 1 + 1000
    assert messages[1].metadata["id"] == rows[1000].pk
    assert memory.original_count == 2000


@pytest.mark.django_db
def test_all_2000_messages_with_20_images_are_loaded_in_order(conversation, settings):
    settings.FIMONE_IMAGE_PIXEL_TURNS = 2_000
    bulk_history(conversation, 2_000, 20)
    add_message(conversation, "user", "current")
    messages = load(DbMemory(conversation.id, BIG))
    assert len(messages) == 2_000
    assert messages[0].text().startswith("message 0")
    assert messages[-1].content == "message 1999"
    assert sum(isinstance(m.content, list) for m in messages) == 20


@pytest.mark.django_db
def test_a_stored_summary_too_big_for_a_shrunk_budget_is_clipped(conversation):
    rows = long_conversation(conversation, turns=3)
    summary_save(
        conversation_id=conversation.id,
        summary=f"{SUMMARY_PREFIX}\n" + "fact " * 4_000,  # ~5,000 tokens
        covers_through_id=rows[1].pk,
        covered_count=2,
    )
    memory = DbMemory(conversation.id, max_tokens=2_000)
    messages = load(memory)
    assert messages[0].is_summary
    assert CompactUtils.estimate_tokens(messages[0].content) <= 500
    assert CompactUtils.estimate_messages_tokens(messages) <= 2_000
    assert memory.was_compacted


def test_db_memory_is_a_base_memory():
    # R1.4: DbMemory is the production implementation of the R1.1 interface.
    from contextmgmt.core.memory import BaseMemory

    assert isinstance(DbMemory(uuid.uuid4(), 1_000), BaseMemory)


@pytest.mark.django_db
def test_rf12_a_compaction_takes_the_facts_stored_with_the_messages(conversation, monkeypatch):
    """RF.12: in the real run path (the chat's loader, DbMemory, the LLM compaction), the
    texts whose facts were found when they were stored are not scanned again; a row stored
    before the column is scanned, as before."""
    from chat import services
    from contextmgmt.core import corrections, factscan

    old = add_message(conversation, "user", "Old row: invoice INV-4471 due 2027-03-18.")
    add_message(conversation, "assistant", "Noted.")
    for i in range(20):
        services.user_message_create(
            conversation=conversation,
            content=f"Q{i}: ship order ORD-{88210 + i} to {i + 2} Rue de Lyon. " + "lorem " * 40,
        )
        answer = services.assistant_message_start(
            conversation=conversation, run_id=f"r{i}", mode="react"
        )
        services.assistant_message_finish(
            message=answer,
            content=f"A{i}: order ORD-{88210 + i} costs ${i + 10}.50. " + "dolor " * 40,
            status="done",
            usage={},
        )
    add_message(conversation, "user", "current question")
    factscan.clear_cache()
    corrections.clear_cache()
    scanned: list[str] = []
    scan = factscan._scan_placed

    def recording_scan(texts, **options):
        scanned.extend(texts)
        return scan(texts, **options)

    monkeypatch.setattr(factscan, "_scan_placed", recording_scan)
    memory = DbMemory(conversation.id, max_tokens=600, compact_llm=FakeLLM(default="S."))
    load(memory)
    assert memory.last.strategy == "llm"
    stored = set(
        Message.objects.filter(conversation=conversation)
        .exclude(facts={})
        .values_list("content", flat=True)
    )
    assert len(stored) == 40
    assert old.content in scanned
    assert not stored & set(scanned)
    assert memory.last.result.facts_missing > 0  # the check ran, on the stored facts
