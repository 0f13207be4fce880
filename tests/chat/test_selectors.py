"""chat.selectors: owner-scoped reads; foreign, unknown and malformed ids look the same."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import transaction
from django.db.transaction import TransactionManagementError

from chat import selectors, services
from chat.errors import AttachmentNotFound, InvalidInput
from chat.models import Attachment, Conversation, Message
from tests.support.factories import make_attachment

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "conversation_id", ["", "nope", None, 42, "00000000-0000-0000-0000-000000000000"]
)
def test_conversation_get_refuses_unknown_ids(user, conversation_id):
    with pytest.raises(Conversation.DoesNotExist):
        selectors.conversation_get(user=user, conversation_id=conversation_id)


def test_conversation_get_refuses_another_users_conversation(user, foreign_conversation):
    with pytest.raises(Conversation.DoesNotExist):
        selectors.conversation_get(user=user, conversation_id=str(foreign_conversation.id))


def test_conversation_get_refuses_an_anonymous_user(conversation):
    with pytest.raises(Conversation.DoesNotExist):
        selectors.conversation_get(user=AnonymousUser(), conversation_id=conversation.id)


def test_conversation_get_accepts_uuid_or_text(user, conversation):
    for conversation_id in (conversation.id, str(conversation.id)):
        assert (
            selectors.conversation_get(user=user, conversation_id=conversation_id) == conversation
        )


@pytest.mark.django_db(transaction=True)
def test_a_locked_read_needs_a_transaction_and_still_refuses_a_foreign_conversation(
    user, conversation, foreign_conversation
):
    # As the ORM's select_for_update: outside a transaction the lock would end at once.
    with pytest.raises(TransactionManagementError):
        selectors.conversation_get(user=user, conversation_id=conversation.id, for_update=True)
    with transaction.atomic():
        found = selectors.conversation_get(
            user=user, conversation_id=conversation.id, for_update=True
        )
        assert found == conversation and found.title == conversation.title
        with pytest.raises(Conversation.DoesNotExist):
            selectors.conversation_get(
                user=user, conversation_id=foreign_conversation.id, for_update=True
            )


def test_message_by_id_reads_the_whole_row(conversation):
    message = services.user_message_create(conversation=conversation, content="hello", run_id="r")
    found = selectors.message_by_id(message.id)
    assert (found, found.content, found.run_id, found.metadata) == (
        message,
        "hello",
        "r",
        {"images": []},
    )
    assert not found._state.adding
    with pytest.raises(Message.DoesNotExist):
        selectors.message_by_id(message.id + 1000)


def test_a_message_page_is_oldest_first(conversation):
    messages = [
        services.user_message_create(conversation=conversation, content=str(i)) for i in range(4)
    ]
    assert selectors.message_page(conversation=conversation).messages == messages
    assert selectors.message_page(conversation=conversation, limit=2).messages == messages[2:]
    earlier = selectors.message_page(conversation=conversation, before_id=messages[2].id)
    assert earlier.messages == messages[:2]


class TestAttachmentsForIds:
    def test_returns_them_in_the_given_order_without_duplicates(self, user, conversation):
        first, second = make_attachment(user, conversation), make_attachment(user, conversation)
        ids = [str(second.id), str(first.id), str(second.id)]
        found = selectors.attachments_for_ids(user=user, conversation=conversation, file_ids=ids)
        assert found == [second, first]

    def test_an_empty_list_is_fine(self, user, conversation):
        assert (
            selectors.attachments_for_ids(user=user, conversation=conversation, file_ids=[]) == []
        )

    @pytest.mark.parametrize("bad_id", ["nope", 7, None, "3f2b8c1e-0d4a-4c6e-9a57-5b1f0e2d7c90"])
    def test_malformed_or_unknown_ids_are_refused(self, user, conversation, bad_id):
        with pytest.raises(AttachmentNotFound) as excinfo:
            selectors.attachments_for_ids(user=user, conversation=conversation, file_ids=[bad_id])
        assert excinfo.value.code == "attachment_not_found"

    def test_another_users_attachment_is_refused(
        self, user, other_user, conversation, foreign_conversation
    ):
        foreign = make_attachment(other_user, foreign_conversation)
        with pytest.raises(AttachmentNotFound):
            selectors.attachments_for_ids(
                user=user, conversation=conversation, file_ids=[str(foreign.id)]
            )

    def test_an_attachment_of_another_own_conversation_is_refused(self, user, conversation):
        elsewhere = services.conversation_create(owner=user)
        attachment = make_attachment(user, elsewhere)
        with pytest.raises(AttachmentNotFound):
            selectors.attachments_for_ids(
                user=user, conversation=conversation, file_ids=[str(attachment.id)]
            )

    @pytest.mark.parametrize("file_ids", ["not-a-list", b"bytes", 5, None])
    def test_a_non_list_is_refused(self, user, conversation, file_ids):
        with pytest.raises(InvalidInput):
            selectors.attachments_for_ids(user=user, conversation=conversation, file_ids=file_ids)

    def test_too_many_ids_are_refused(self, user, conversation):
        ids = [str(uuid.uuid4()) for _ in range(selectors.MAX_ATTACHMENTS_PER_MESSAGE + 1)]
        with pytest.raises(InvalidInput) as excinfo:
            selectors.attachments_for_ids(user=user, conversation=conversation, file_ids=ids)
        assert excinfo.value.code == "too_many_attachments"


def test_attachment_get_is_owner_only(user, other_user, conversation):
    attachment = make_attachment(user, conversation)
    assert selectors.attachment_get(user=user, file_id=str(attachment.id)) == attachment
    with pytest.raises(Attachment.DoesNotExist):
        selectors.attachment_get(user=other_user, file_id=str(attachment.id))
    with pytest.raises(Attachment.DoesNotExist):
        selectors.attachment_get(user=user, file_id="../../etc/passwd")
