"""Whole tool results in the full-text index: what indexing one costs, and what ``recall``
finds of facts that were only ever in tool results.

In a fresh database (temporary FIMONE_DATA_DIR, SQLite):

- stores and indexes one result of 50,000, 200,000 and 1,000,000 characters (the stored
  maximum, ``chat.services.TOOL_RESULT_MAX_CHARS``) as a finished run does
  (``tool_results_store`` then ``search_index.index_tool_results``), and prints the time
  and the number of passages of each, and the longest single write transaction;
- builds one conversation of 200 turns of chat filler with 15 facts that were only ever in
  tool results — 12 pages of 50,000 characters read with ``fetch_url`` and 3 documents
  of 12,000 read with ``read_document``, each fact at 60 % of its result — and asks
  ``recall`` for each by its key words (limit 5), printing how many come back, once with
  the whole results indexed and once with only the 2,000-character previews the runs'
  steps keep (how the index was before whole results were).

    .venv/bin/python bench/tool_results.py
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _django import setup_django  # noqa: E402 — beside this script

FILLER = (
    "The tide table for the northern pier lists the usual times for the week.",
    "Gulls gathered on the breakwater while the ferry unloaded its morning cargo.",
    "A crew repainted the railings along the promenade before the summer season.",
    "Fishing boats returned at dusk with crates of mackerel and a few crabs.",
)
# Neither the subjects nor the names occur in the filler: where a key word also fills the
# page, which part of a passage ``recall`` quotes is the matter of where a quote is centred.
SUBJECTS = (
    "locker code of cabin",
    "badge number of warden",
    "radio channel of tug",
    "mooring fee of berth",
    "crane licence of operator",
)
NAMES = (
    "Aster Birch Cedar Dahlia Elm Fern Gorse Hazel Iris Juniper Kale Larch Myrtle Nettle Oak"
).split()


def page(chars: int, fact: str, at: float = 0.6) -> str:
    lines, size, placed, i = [], 0, False, 0
    while size < chars:
        if not placed and size >= chars * at:
            lines.append(fact)
            placed = True
        else:
            lines.append(f"{i}. {FILLER[i % len(FILLER)]}")
            i += 1
        size += len(lines[-1]) + 1
    return "\n".join(lines)


def fact_of(n: int) -> tuple[str, str, str]:
    """(sentence, recall query, value) of fact ``n``."""
    subject, name = SUBJECTS[n % len(SUBJECTS)], NAMES[n]
    value = f"ZK-{n:02d}-{4000 + n * 131}"
    return f"The {subject} {name} is {value}.", f"{subject} {name}", value


def answer_with(
    conversation, question: str, calls: Sequence[tuple[str, str, str]], *, index: bool = True
):
    """One finished run answering ``question`` that called each (tool, arguments, result) of
    ``calls``: its whole results stored and, with ``index``, indexed as a run's finish does."""
    from chat import services
    from chat.runs.record import RECORD_TEXT_CHARS
    from chat.search import index as search_index
    from fimone.agent.tools import KeptResult

    services.user_message_create(conversation=conversation, content=question)
    answer = services.assistant_message_start(
        conversation=conversation, run_id=f"r{time.monotonic_ns()}", mode="react"
    )
    steps, kept = [], []
    for n, (name, args, text) in enumerate(calls):
        call_id = f"c{n}"
        cut = text[:RECORD_TEXT_CHARS] + f"… [{len(text) - RECORD_TEXT_CHARS:,} more chars]"
        steps += [
            {"kind": "tool_call", "name": name, "arguments": args, "call_id": call_id},
            {"kind": "tool_result", "name": name, "result": cut, "call_id": call_id},
        ]
        kept.append(KeptResult(call_id, name, args, text))
    services.tool_results_store(message=answer, results=kept)
    services.assistant_message_finish(
        message=answer, content="I read it.", status="done", extra={"steps": steps}
    )
    if index:
        search_index.index_tool_results(message=answer)
    return answer


def main() -> None:
    setup_django()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from chat import services
    from chat.models import Message, SearchDocument
    from chat.recall.lookup import recall_passages
    from chat.search import index as search_index

    owner = get_user_model().objects.create_user(username="bench", password="x")

    print("Indexing one whole result (as a run's finish does):")
    conversation = services.conversation_create(owner=owner, title="sizes")
    for chars in (50_000, 200_000, 1_000_000):
        times, longest, passages = [], 0.0, 0
        for _ in range(3):
            text = page(chars, "x")
            answer = answer_with(conversation, "Read it", [("fetch_url", "{}", text)], index=False)
            started = time.perf_counter()
            with CaptureQueriesContext(connection) as queries:
                passages = search_index.index_tool_results(message=answer)
            times.append(time.perf_counter() - started)
            longest = max(longest, max(float(q["time"]) for q in queries))
        print(
            f"  {chars:>9,} chars: {passages:>5,} passages, median {statistics.median(times):.3f} s"
            f" to index, longest statement {longest * 1000:.1f} ms"
        )

    conversation = services.conversation_create(owner=owner, title="harbour")
    facts = [fact_of(n) for n in range(15)]
    fact_turns = {5 + 13 * n: n for n in range(15)}
    for turn in range(200):
        n = fact_turns.get(turn)
        if n is not None and n < 12:
            url = f'{{"url": "https://harbour.example/notice/{n}"}}'
            answer_with(
                conversation, f"Read notice {n}", [("fetch_url", url, page(50_000, facts[n][0]))]
            )
            continue
        if n is not None:
            args = f'{{"file": "report-{n}.pdf", "pages": "1-10"}}'
            text = page(12_000, facts[n][0])
            answer_with(conversation, f"Read report {n}", [("read_document", args, text)])
            continue
        services.user_message_create(conversation=conversation, content=f"Turn {turn}: ok?")
        answer = services.assistant_message_start(
            conversation=conversation, run_id=f"t{turn}", mode="react"
        )
        services.assistant_message_finish(
            message=answer, content=f"{FILLER[turn % 4]} Nothing else.", status="done"
        )

    def found() -> int:
        return sum(
            1
            for _sentence, query, value in facts
            if any(
                value in p for p in recall_passages(conversation_id=conversation.pk, query=query)
            )
        )

    whole = found()
    SearchDocument.objects.filter(conversation=conversation, tool_result__isnull=False).delete()
    for answer in Message.objects.filter(conversation=conversation, role="assistant"):
        search_index._insert(  # the previews, as the index held them before
            [
                SearchDocument(
                    conversation_id=conversation.pk,
                    message_id=answer.pk,
                    kind=kind,
                    label=label,
                    body=p.text,
                    terms=search_index.passage_terms(p),
                    offset=p.offset,
                    created_at=answer.created_at,
                )
                for kind, label, text in search_index.message_texts(
                    role="assistant",
                    content="",
                    metadata=answer.metadata,
                    question=search_index._question_before(answer),
                )
                for p in search_index.passages(text)
            ]
        )
    previews = found()
    print(
        f"recall of 15 facts only in tool results (12 pages, 3 documents, 200 turns): "
        f"{whole}/15 with whole results indexed, {previews}/15 with previews only"
    )


if __name__ == "__main__":
    main()
