"""The model signals of chat/signals.py that the other tests do not reach directly."""

from __future__ import annotations

import pytest

from chat import services, signals
from tests.support.garbage import cycle_collector_off, cyclic_garbage

pytestmark = pytest.mark.django_db


def test_deleting_a_conversation_with_a_running_answer_leaves_no_reference_cycle(
    conversation, monkeypatch, django_capture_on_commit_callbacks
):
    """The running answers' run ids are read by their JSON key before the delete: that read
    must not leave Django's field-lookup error for the cycle collector. They go to the
    runs' stop once the delete commits, handed over, not left on the instance (RD.1)."""
    stopped = []
    monkeypatch.setattr(
        signals.runs, "conversation_deleted", lambda **kw: stopped.append(kw["running_run_ids"])
    )
    services.user_message_create(conversation=conversation, content="hello")
    services.assistant_message_start(conversation=conversation, run_id="r1", mode="react")
    with django_capture_on_commit_callbacks(execute=True):
        with cycle_collector_off():
            services.conversation_delete(conversation=conversation)
            garbage = cyclic_garbage()
    assert "FieldError" not in garbage, garbage
    assert stopped == [["r1"]]
    assert not hasattr(conversation, "_running_run_ids")
