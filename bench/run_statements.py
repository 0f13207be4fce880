"""What writing a run's reads and updates as plain SQL saves: each through the ORM (build,
compile, run) against the same statement written as SQL (``chat.row_reads``,
``chat.row_updates``; the "plain" column).

    .venv/bin/python bench/run_statements.py [--repeat 2000]

On a fresh SQLite database with three conversations of 13 messages (a summary, a pin,
images, a document, a tool result: tests/support/run_reads.py). Prints the median
microseconds of CPU (``thread_time``) per read for each of the reads every run makes, both
ways, and their sum per run; then the same for the four updates a run's end makes (inside
one transaction, rolled back: a commit per update would measure the disk). The rows are the
same either way (the test suite checks it).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._django import setup_django  # noqa: E402


def cpu_us(read, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.thread_time_ns()
        read()
        samples.append((time.thread_time_ns() - start) / 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    setup_django(prefix="fimone-bench-statements-")

    from django.contrib.auth import get_user_model
    from django.db import transaction

    from chat import history_rows as rows
    from chat import selectors
    from chat.compaction import ledger
    from chat.documents.context import _SENT_DOCUMENT, _sent_document_query
    from chat.models import Conversation, Message
    from chat.runs import control
    from tests.support.run_reads import _conversation

    owner = get_user_model().objects.create_user("bench")
    conversations = [_conversation(owner, with_summary=True, name=name) for name in ("a", "b", "c")]
    target = conversations[1].id
    summary = rows.latest_summary(target)
    after = {"through": summary.covers_through_id, "at": summary.covers_through_at}
    answer = Message.objects.filter(conversation_id=target).order_by("id").last()
    reads = {
        "newest summary": (
            lambda: rows.LATEST_SUMMARY.rows(conversation=target),
            lambda: list(rows.latest_summary_query(conversation=target)),
        ),
        "history after the summary": (
            lambda: rows.HISTORY_AFTER.rows(conversation=target, **after),
            lambda: list(rows.history_query(conversation=target, **after)),
        ),
        "sent documents": (
            lambda: _SENT_DOCUMENT.rows(conversation=target),
            lambda: list(_sent_document_query(conversation=target)),
        ),
        "running answer": (
            lambda: control._RUNNING_ANSWER.rows(conversation=target),
            lambda: list(control._running_answer_query(conversation=target)),
        ),
        "conversation, locked": (
            lambda: selectors._OWN_CONVERSATION_LOCKED.get(conversation=target, owner=owner.pk),
            lambda: Conversation.objects.select_for_update().get(pk=target, owner_id=owner.pk),
        ),
        "answer by id": (
            lambda: selectors._MESSAGE_BY_ID.get(message=answer.pk),
            lambda: Message.objects.get(pk=answer.pk),
        ),
        "totals, locked": (
            lambda: ledger._LOCKED_LEDGER.rows(conversation=target),
            lambda: list(ledger._locked_ledger_query(conversation=target)),
        ),
    }
    print(f"median CPU per read, µs ({args.repeat} reads each, SQLite, in one transaction)")
    print(f"{'read':28} {'ORM':>8} {'plain':>9} {'ratio':>6}")
    totals = [0.0, 0.0]
    with transaction.atomic():  # the locked reads need one
        for name, (plain, orm) in reads.items():
            plain()  # writes its statement on first use
            orm_us, plain_us = cpu_us(orm, args.repeat), cpu_us(plain, args.repeat)
            totals[0] += orm_us
            totals[1] += plain_us
            print(f"{name:28} {orm_us:8.1f} {plain_us:9.1f} {plain_us / orm_us:6.2f}")
    print(
        f"{'per run (the seven)':28} {totals[0]:8.1f} {totals[1]:9.1f} {totals[1] / totals[0]:6.2f}"
    )
    updates(conversations[0], args.repeat)


def updates(conversation, repeat: int) -> None:
    from django.db import transaction
    from django.utils import timezone

    from chat import row_updates
    from chat.models import Conversation, Message

    question, answer = Message.objects.filter(conversation=conversation).order_by("id")[:2]
    at = timezone.now()
    finish = {
        "content": "The answer, with **some** Markdown.",
        "status": "done",
        "kind": "answer",
        "metadata": {"mode": "react", "usage": {"input_tokens": 200, "output_tokens": 20}},
        "html": "<p>The answer, with <strong>some</strong> Markdown.</p>",
        "html_version": 3,
    }
    ledger = {"updated_at": at, "ledger": {"saved_input_tokens": 10, "summaries": {}}}
    waiting = {"conversation": conversation.pk, "ids": [question.pk]}
    shapes = {
        "conversation's time": (
            lambda: row_updates.CONVERSATION.update(
                {"updated_at": at}, conversation=conversation.pk
            ),
            lambda: Conversation.objects.filter(pk=conversation.pk).update(updated_at=at),
        ),
        "answer stored": (
            lambda: row_updates.MESSAGE.update(finish, message=answer.pk),
            lambda: Message.objects.filter(pk=answer.pk).update(**finish),
        ),
        "question settled": (
            lambda: row_updates.WAITING_QUESTIONS.update({"status": "done"}, **waiting),
            lambda: Message.objects.filter(
                conversation_id=conversation.pk,
                role="user",
                pk__in=[question.pk],
                status__in=["pending", "interrupted"],
            ).update(status="done"),
        ),
        "totals and time": (
            lambda: row_updates.CONVERSATION.update(ledger, conversation=conversation.pk),
            lambda: Conversation.objects.filter(pk=conversation.pk).update(**ledger),
        ),
    }
    print(f"\nmedian CPU per update, µs ({repeat} updates each, SQLite, in one transaction)")
    print(f"{'update':28} {'ORM':>8} {'plain':>9} {'ratio':>6}")
    totals = [0.0, 0.0]
    with transaction.atomic():
        for name, (plain, orm) in shapes.items():
            plain()
            orm_us, plain_us = cpu_us(orm, repeat), cpu_us(plain, repeat)
            totals[0] += orm_us
            totals[1] += plain_us
            print(f"{name:28} {orm_us:8.1f} {plain_us:9.1f} {plain_us / orm_us:6.2f}")
        transaction.set_rollback(True)
    print(
        f"{'per run (the four)':28} {totals[0]:8.1f} {totals[1]:9.1f} {totals[1] / totals[0]:6.2f}"
    )


if __name__ == "__main__":
    main()
