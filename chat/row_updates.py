"""The updates every run makes, compiled once per connection (``chat.compiled_updates``):
a conversation's row, an answer's row, and the questions a run's end settles. Only
``chat.services`` and ``chat.ledger`` write through them."""

from __future__ import annotations

from chat.compiled_reads import PROBE_ID, PROBE_UUID, Probe
from chat.compiled_updates import CompiledUpdate
from chat.models import Conversation, Message

_CONVERSATION_ID = Probe(Conversation._meta.get_field("id"), PROBE_UUID)
_MESSAGE_ID = Probe(Message._meta.get_field("id"), PROBE_ID)

# ``CONVERSATION.update({"updated_at": now}, conversation=id)``
CONVERSATION = CompiledUpdate(
    lambda *, conversation: Conversation.objects.filter(pk=conversation),
    conversation=_CONVERSATION_ID,
)

# ``MESSAGE.update({...}, message=id)``
MESSAGE = CompiledUpdate(lambda *, message: Message.objects.filter(pk=message), message=_MESSAGE_ID)

# The user messages among ``ids`` that still wait for an answer (``pending``, or
# ``interrupted`` and answered again by a retry): ``WAITING_QUESTIONS.update({"status": …},
# conversation=id, ids=[…])``.
WAITING_QUESTIONS = CompiledUpdate(
    lambda *, conversation, ids: Message.objects.filter(
        conversation_id=conversation,
        role=Message.Role.USER,
        pk__in=ids,
        status__in=[Message.Status.PENDING, Message.Status.INTERRUPTED],
    ),
    conversation=_CONVERSATION_ID,
    ids=_MESSAGE_ID,
)
