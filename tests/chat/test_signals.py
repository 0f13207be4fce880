"""The model signals of chat/signals.py that the other tests do not reach directly."""

from __future__ import annotations

import pytest

from chat import services
from tests.support.garbage import cycle_collector_off, cyclic_garbage

pytestmark = pytest.mark.django_db


def test_deleting_a_conversation_with_a_running_answer_leaves_no_reference_cycle(conversation):
    """The running answers' run ids are read by their JSON key before the delete: that read
    must not leave Django's field-lookup error for the cycle collector."""
    services.user_message_create(conversation=conversation, content="hello")
    services.assistant_message_start(conversation=conversation, run_id="r1", mode="react")
    with cycle_collector_off():
        services.conversation_delete(conversation=conversation)
        garbage = cyclic_garbage()
    assert "FieldError" not in garbage, garbage
    assert conversation._running_run_ids == ["r1"]
