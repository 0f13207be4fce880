"""chat.services (DESIGN §3, SPEC R4.2, RP.1): the message lifecycle."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from chat import services
from chat.errors import InvalidInput
from chat.models import Attachment, Conversation, Message, SearchDocument
from chat.search import index as search_index
from contextmgmt.core.factstore import stored_facts
from contextmgmt.core.tokens import stored_counts
from tests.chat.images import image_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def uploaded_attachments(user, conversation) -> list[Attachment]:
    return [
        services.attachment_create(
            owner=user,
            conversation=conversation,
            uploaded_file=SimpleUploadedFile(f"{fmt}.img", image_bytes(fmt)),
        )
        for fmt in ("PNG", "JPEG")
    ]


@pytest.fixture
def untitled_conversation(user) -> Conversation:
    return services.conversation_create(owner=user)


class TestConversations:
    def test_create_cleans_the_title(self, user):
        conversation = services.conversation_create(owner=user, title="  a \n b  ", mode="dag")
        assert (conversation.title, conversation.mode) == ("a b", "dag")

    @pytest.mark.parametrize(
        ("kwargs", "code"),
        [
            ({"mode": "plan"}, "invalid_mode"),
            ({"mode": None}, "invalid_mode"),
            ({"title": "t" * 201}, "title_too_long"),
            ({"title": ["x"]}, "invalid_title"),
        ],
    )
    def test_create_refuses_bad_values(self, user, kwargs, code):
        with pytest.raises(InvalidInput) as excinfo:
            services.conversation_create(owner=user, **kwargs)
        assert excinfo.value.code == code
        assert not Conversation.objects.exists()

    def test_title_of_exactly_the_maximum_length_is_kept(self, user):
        conversation = services.conversation_create(owner=user, title="t" * 200)
        assert len(conversation.title) == 200

    def test_update_changes_only_what_is_given(self, conversation):
        services.conversation_update(conversation=conversation, mode="dag")
        conversation.refresh_from_db()
        assert (conversation.title, conversation.mode) == ("Alice's chat", "dag")

    def test_update_with_nothing_given_is_a_no_op(self, conversation):
        before = conversation.updated_at
        services.conversation_update(conversation=conversation)
        conversation.refresh_from_db()
        assert conversation.updated_at == before

    def test_delete_cascades(self, conversation, uploaded_attachments):
        services.user_message_create(
            conversation=conversation, content="q", attachments=uploaded_attachments
        )
        services.conversation_delete(conversation=conversation)
        assert not Message.objects.exists() and not Attachment.objects.exists()


class TestUserMessage:
    def test_a_query_is_pending_unpinned_and_carries_its_run(self, conversation):
        message = services.user_message_create(
            conversation=conversation, content="What is 2+2?", run_id="run-1"
        )
        message.refresh_from_db()
        assert (message.role, message.kind, message.status) == ("user", "query", "pending")
        assert message.pinned is False  # pinned is the user's keep-verbatim (RV.2)
        assert (message.metadata, message.run_id) == ({"images": []}, "run-1")

    def test_an_injected_follow_up_is_marked_injected(self, conversation):
        message = services.user_message_create(
            conversation=conversation, content="also check X", injected=True, run_id="run-1"
        )
        assert (message.kind, message.pinned) == ("injected", False)

    def test_attachments_are_linked_and_listed_in_metadata(
        self, conversation, uploaded_attachments
    ):
        message = services.user_message_create(
            conversation=conversation, content="look", attachments=uploaded_attachments
        )
        assert message.metadata["images"] == [
            {"file_id": str(uploaded_attachments[0].id), "mime_type": "image/png"},
            {"file_id": str(uploaded_attachments[1].id), "mime_type": "image/jpeg"},
        ]
        assert set(message.attachments.all()) == set(uploaded_attachments)

    def test_an_attachment_already_used_stays_with_its_first_message(
        self, conversation, uploaded_attachments
    ):
        first = services.user_message_create(
            conversation=conversation, content="one", attachments=uploaded_attachments[:1]
        )
        second = services.user_message_create(
            conversation=conversation, content="again", attachments=uploaded_attachments[:1]
        )
        uploaded_attachments[0].refresh_from_db()
        assert uploaded_attachments[0].message == first
        assert second.metadata["images"][0]["file_id"] == str(uploaded_attachments[0].id)

    def test_an_image_alone_is_a_valid_message(self, conversation, uploaded_attachments):
        message = services.user_message_create(
            conversation=conversation, content="", attachments=uploaded_attachments
        )
        assert message.content == ""

    @pytest.mark.parametrize("content", ["", "   \n\t "])
    def test_an_empty_message_is_refused(self, conversation, content):
        with pytest.raises(InvalidInput) as excinfo:
            services.user_message_create(conversation=conversation, content=content)
        assert excinfo.value.code == "empty_message"
        assert not Message.objects.exists()

    def test_an_attachment_of_another_conversation_is_refused(
        self, user, conversation, uploaded_attachments
    ):
        elsewhere = services.conversation_create(owner=user)
        with pytest.raises(InvalidInput):
            services.user_message_create(
                conversation=elsewhere, content="x", attachments=uploaded_attachments
            )
        assert not Message.objects.exists()

    def test_the_first_query_titles_an_untitled_conversation(self, untitled_conversation):
        services.user_message_create(
            conversation=untitled_conversation, content="\n  Plan a trip to Kyoto  \nin May"
        )
        untitled_conversation.refresh_from_db()
        assert untitled_conversation.title == "Plan a trip to Kyoto"

    def test_a_long_first_query_gives_a_shortened_title(self, untitled_conversation):
        words = "word " * 40
        services.user_message_create(conversation=untitled_conversation, content=words)
        untitled_conversation.refresh_from_db()
        assert untitled_conversation.title.endswith("…")
        assert len(untitled_conversation.title) <= services.AUTO_TITLE_CHARS + 1
        assert untitled_conversation.title.startswith("word word")

    def test_an_existing_title_is_kept(self, conversation):
        services.user_message_create(conversation=conversation, content="something else")
        conversation.refresh_from_db()
        assert conversation.title == "Alice's chat"

    def test_the_conversation_is_touched(self, conversation):
        before = conversation.updated_at
        services.user_message_create(conversation=conversation, content="hi")
        conversation.refresh_from_db()
        assert conversation.updated_at > before


class TestAssistantMessage:
    def test_start_creates_a_running_answer(self, conversation):
        message = services.assistant_message_start(
            conversation=conversation, run_id="run-1", mode="dag"
        )
        assert (message.role, message.kind, message.status) == ("assistant", "answer", "running")
        assert message.pinned is False
        assert (message.metadata, message.run_id) == ({"mode": "dag"}, "run-1")

    def test_finish_stores_text_usage_compaction_and_closes_the_run(self, conversation):
        query = services.user_message_create(conversation=conversation, content="q", run_id="r1")
        follow_up = services.user_message_create(
            conversation=conversation, content="f", injected=True, run_id="r1"
        )
        other_run = services.user_message_create(
            conversation=conversation, content="o", run_id="r2"
        )
        answer = services.assistant_message_start(
            conversation=conversation, run_id="r1", mode="react"
        )
        services.assistant_message_finish(
            message=answer,
            content="The answer",
            usage={"input_tokens": 10, "output_tokens": 5},
            compaction={"strategy": "truncate"},
            extra={"elapsed_ms": 12},
        )
        answer.refresh_from_db()
        assert (answer.content, answer.status, answer.kind) == ("The answer", "done", "answer")
        assert answer.run_id == "r1"
        assert answer.metadata == {
            "mode": "react",
            "usage": {"input_tokens": 10, "output_tokens": 5},
            "compaction": {"strategy": "truncate"},
            "elapsed_ms": 12,
        }
        statuses = dict(Message.objects.filter(role="user").values_list("id", "status"))
        assert statuses == {query.id: "done", follow_up.id: "done", other_run.id: "pending"}

    def test_an_error_finish_keeps_the_partial_text_and_marks_kind_error(self, conversation):
        query = services.user_message_create(conversation=conversation, content="q", run_id="r1")
        answer = services.assistant_message_start(
            conversation=conversation, run_id="r1", mode="react"
        )
        error = {"code": "llm_unavailable", "message": "The model did not answer."}
        services.assistant_message_finish(
            message=answer, content="partial", status="error", error=error
        )
        answer.refresh_from_db()
        query.refresh_from_db()
        assert (answer.status, answer.kind, answer.content) == ("error", "error", "partial")
        assert answer.metadata["error"] == error
        assert query.status == "done" and query.content == "q"

    def test_a_cancelled_finish_is_an_answer_marked_cancelled(self, conversation):
        answer = services.assistant_message_start(
            conversation=conversation, run_id="r1", mode="react"
        )
        services.assistant_message_finish(message=answer, content="", status="cancelled")
        answer.refresh_from_db()
        assert (answer.status, answer.kind) == ("cancelled", "answer")

    def test_finish_after_the_conversation_was_deleted_is_harmless(self, conversation):
        answer = services.assistant_message_start(
            conversation=conversation, run_id="r1", mode="react"
        )
        services.conversation_delete(conversation=conversation)
        finished = services.assistant_message_finish(message=answer, content="late")
        assert finished.status == "done"
        assert not Message.objects.exists()

    def test_finish_indexes_and_settles_in_its_transaction_without_savepoints(self, conversation):
        query = services.user_message_create(conversation=conversation, content="q", run_id="r1")
        answer = services.assistant_message_start(
            conversation=conversation, run_id="r1", mode="react"
        )
        with CaptureQueriesContext(connection) as seen:
            services.assistant_message_finish(
                message=answer, content="An indexed answer", answered_ids=[query.id]
            )
        # An ``executemany`` is captured as "N times: INSERT …".
        statements = [
            re.sub(r"^\d+ times: ", "", q["sql"]).split()[0].upper() for q in seen.captured_queries
        ]
        # The finish's own (the test runs in a transaction); none for the index or settling.
        assert statements.count("SAVEPOINT") == 1 and "INSERT" in statements
        assert SearchDocument.objects.filter(message=answer, body="An indexed answer").exists()
        query.refresh_from_db()
        assert query.status == "done"

    def test_a_failed_index_write_rolls_the_whole_finish_back(self, conversation, monkeypatch):
        answer = services.assistant_message_start(
            conversation=conversation, run_id="r1", mode="react"
        )

        def broken(message):
            raise IntegrityError("the index refused it")

        monkeypatch.setattr(search_index, "_documents", broken)
        with pytest.raises(IntegrityError), transaction.atomic():
            services.assistant_message_finish(message=answer, content="never stored")
        answer.refresh_from_db()
        assert (answer.status, answer.content) == ("running", "")
        assert not SearchDocument.objects.filter(message=answer).exists()

    @pytest.mark.parametrize("status", ["running", "pending", "bogus"])
    def test_finish_refuses_a_non_final_status(self, conversation, status):
        answer = services.assistant_message_start(
            conversation=conversation, run_id="r1", mode="react"
        )
        with pytest.raises(InvalidInput):
            services.assistant_message_finish(message=answer, content="x", status=status)
        answer.refresh_from_db()
        assert answer.status == "running"


def test_messages_mark_interrupted_closes_what_a_dead_server_left(conversation):
    finished = services.assistant_message_start(
        conversation=conversation, run_id="r0", mode="react"
    )
    services.assistant_message_finish(message=finished, content="ok")
    pending = services.user_message_create(conversation=conversation, content="q", run_id="r1")
    running = services.assistant_message_start(conversation=conversation, run_id="r1", mode="react")

    assert services.messages_mark_interrupted() == 2
    statuses = dict(Message.objects.values_list("id", "status"))
    assert statuses == {pending.id: "interrupted", running.id: "interrupted", finished.id: "done"}
    assert services.messages_mark_interrupted() == 0


def test_a_second_running_answer_in_one_conversation_is_refused(conversation):
    """One active run per conversation holds in the database itself (issue 10)."""
    services.assistant_message_start(conversation=conversation, run_id="r1", mode="react")
    with pytest.raises(IntegrityError), transaction.atomic():
        services.assistant_message_start(conversation=conversation, run_id="r2", mode="react")
    other = services.conversation_create(owner=conversation.owner)
    services.assistant_message_start(conversation=other, run_id="r3", mode="react")


# --- the facts of a message, found when it is stored ----------------------------------------


def test_rf12_a_stored_message_keeps_the_facts_of_its_content(conversation):
    """RF.12: a message's facts are found once, when its content is stored (the user's
    message when it is created, an answer when it is finished), as the fact check's own
    stored form."""
    question = services.user_message_create(
        conversation=conversation, content="Ship order ORD-88213 to 12 Rue de Lyon by 2027-03-18."
    )
    answer = services.assistant_message_start(conversation=conversation, run_id="r", mode="react")
    assert answer.facts == {}  # nothing yet: a running answer is not history
    services.assistant_message_finish(
        message=answer, content="Order ORD-88213 costs $1,234.56.", status="done", usage={}
    )
    question.refresh_from_db()
    answer.refresh_from_db()
    assert question.facts == stored_facts(question.content)
    assert answer.facts == stored_facts(answer.content)
    values = answer.facts["facts"]["value"]
    assert "ORD-88213" in values and "$1,234.56" in values


def test_rf12_an_empty_message_stores_no_facts(conversation):
    document = services.attachment_create(
        owner=conversation.owner,
        conversation=conversation,
        uploaded_file=SimpleUploadedFile("notes.txt", b"Code 4471", content_type="text/plain"),
    )
    message = services.user_message_create(
        conversation=conversation, content="", attachments=[document]
    )
    message.refresh_from_db()
    assert message.facts == {}
    assert bytes(message.token_counts) == b""


def test_rf12_a_stored_message_keeps_the_class_counts_of_its_content(conversation):
    """RF.12: a message's class counts are counted once, when its content is stored (the
    user's message when created, an answer when finished), in the stored form a load
    gives back to the message."""
    question = services.user_message_create(conversation=conversation, content="Привет, 上下文 42")
    answer = services.assistant_message_start(conversation=conversation, run_id="r", mode="react")
    assert bytes(answer.token_counts) == b""  # nothing yet: a running answer is not history
    services.assistant_message_finish(
        message=answer, content="Order ORD-88213 costs $1,234.56.", status="done", usage={}
    )
    question.refresh_from_db()
    answer.refresh_from_db()
    assert bytes(question.token_counts) == stored_counts("Привет, 上下文 42")
    assert bytes(answer.token_counts) == stored_counts("Order ORD-88213 costs $1,234.56.")
