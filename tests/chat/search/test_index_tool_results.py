"""RT.2: whole tool results in the full-text index (chat/search/index.py) — indexed as
passages with their call and question, kept when the answer is indexed again, recomputed by
``rebuild_search_index``, and indexed for results stored before by the migration."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from chat import services
from chat.models import Message, SearchDocument, ToolResult
from chat.recall.lookup import recall_passages
from chat.runs.record import RECORD_TEXT_CHARS
from chat.search import index as search_index
from fimone.agent.tools import KeptResult
from tests.support.migrations import chat_migration_and_previous, migrate

FACT = "The vault combination is 31-17-88."


def long_result(chars: int = 40_000, at: float = 0.6) -> str:
    lines, size = [], 0
    while size < chars:
        line = FACT if size >= chars * at and FACT not in lines else f"Entry {len(lines)}: calm."
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def preview(text: str) -> str:
    return text[:RECORD_TEXT_CHARS] + f"… [{len(text) - RECORD_TEXT_CHARS:,} more chars]"


def answer_with_steps(conversation, result: str, *, question: str = "Open the ledger") -> Message:
    Message.objects.create(conversation=conversation, role="user", content=question)
    steps = [
        {"kind": "tool_call", "name": "open_ledger", "arguments": '{"year": 2024}', "call_id": "c"},
        {"kind": "tool_result", "name": "open_ledger", "result": preview(result), "call_id": "c"},
    ]
    return Message.objects.create(
        conversation=conversation,
        role="assistant",
        kind="answer",
        status="running",
        content="",
        metadata={"steps": steps},
    )


def finish_as_a_run_does(answer: Message, result: str) -> None:
    """What ``chat.runs.storage.persist_finish`` does: store, finish, then index."""
    services.tool_results_store(
        message=answer, results=[KeptResult("c", "open_ledger", '{"year": 2024}', result)]
    )
    services.assistant_message_finish(message=answer, content="It is open.", status="done")
    search_index.index_tool_results(message=answer)


@pytest.mark.django_db
def test_rt2_a_stored_result_is_indexed_whole_and_its_preview_is_not(conversation):
    result = long_result()
    answer = answer_with_steps(conversation, result)
    finish_as_a_run_does(answer, result)

    tool_documents = SearchDocument.objects.filter(message=answer, kind="tool")
    assert not tool_documents.filter(tool_result__isnull=True).exists()
    stored = ToolResult.objects.get(message=answer)
    assert tool_documents.count() == tool_documents.filter(tool_result=stored).count() > 20
    found = recall_passages(conversation_id=conversation.pk, query="vault combination")
    assert FACT in found[0] and f'recall id "{stored.result_id}"' in found[0]
    # Found by the question its run answered, and by the call, anywhere in the result.
    assert FACT in " ".join(recall_passages(conversation_id=conversation.pk, query="ledger 31"))

    # The answer indexed again (its text changed) keeps its result's passages.
    answer.refresh_from_db()
    search_index.index_message(message=answer)
    assert SearchDocument.objects.filter(tool_result=stored).count() == tool_documents.count()
    assert not tool_documents.filter(tool_result__isnull=True).exists()


@pytest.mark.django_db
def test_rt2_recall_is_not_indexed_and_an_old_answer_keeps_its_preview(conversation):
    """An answer from before whole results were stored is found by its preview still;
    ``recall``'s own results only quote the conversation and are left out."""
    result = long_result(3_000, at=0.1)
    old = answer_with_steps(conversation, result)
    services.assistant_message_finish(message=old, content="Old.", status="done")
    assert SearchDocument.objects.filter(message=old, kind="tool", label="open_ledger").exists()

    services.tool_results_store(
        message=old, results=[KeptResult("r", "recall", "{}", f"{FACT} (quoted)")]
    )
    assert search_index.index_tool_results(message=old) == 0


@pytest.mark.django_db
def test_rt2_rebuild_indexes_the_whole_results(conversation):
    result = long_result()
    answer = answer_with_steps(conversation, result)
    finish_as_a_run_does(answer, result)
    tools = SearchDocument.objects.filter(kind="tool")
    before = sorted(tools.values_list("body", "terms", "offset", "label"))
    SearchDocument.objects.all().delete()

    call_command("rebuild_search_index", str(conversation.pk), stdout=io.StringIO())

    assert sorted(tools.values_list("body", "terms", "offset", "label")) == before
    stored = ToolResult.objects.get(message=answer)
    assert SearchDocument.objects.filter(tool_result=stored).count() > 20


@pytest.mark.django_db(transaction=True)
def test_rt2_the_migration_indexes_results_stored_before_in_place_of_their_previews():
    target, previous = chat_migration_and_previous("whole_tool_results")
    executor = migrate([previous])
    try:
        apps = executor.loader.project_state([previous]).apps
        user = apps.get_model("auth", "User").objects.create(username="old", password="x")
        conversation = apps.get_model("chat", "Conversation").objects.create(owner=user)
        OldMessage = apps.get_model("chat", "Message")
        OldDocument = apps.get_model("chat", "SearchDocument")
        result = long_result()
        OldMessage.objects.create(
            conversation=conversation, role="user", kind="query", content="Open the ledger"
        )
        answer = OldMessage.objects.create(
            conversation=conversation, role="assistant", kind="answer", status="done"
        )
        apps.get_model("chat", "ToolResult").objects.create(
            conversation=conversation,
            message=answer,
            call_id="c",
            name="open_ledger",
            arguments="{}",
            content=result,
            chars=len(result),
        )
        for label, body in (("open_ledger", preview(result)), ("DAG step 1", "a step's result")):
            OldDocument.objects.create(
                conversation=conversation,
                message=answer,
                kind="tool",
                label=label,
                body=body,
                terms=body.lower(),
                created_at=answer.created_at,
            )

        migrate([target])
        # The later migrations keep these rows as they are; the models read them with
        # every column those migrations add.
        migrate(executor.loader.graph.leaf_nodes())

        documents = SearchDocument.objects.filter(message_id=answer.pk, kind="tool")
        assert set(documents.filter(tool_result__isnull=True).values_list("label", flat=True)) == {
            "DAG step 1"
        }
        assert documents.filter(tool_result__isnull=False).count() > 20
        found = recall_passages(conversation_id=conversation.pk, query="vault combination")
        assert FACT in found[0]
    finally:
        migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db
def test_rt2_a_long_result_is_written_in_batches_and_indexed_again_in_place(
    conversation, monkeypatch
):
    monkeypatch.setattr(search_index, "INDEX_BATCH", 7)
    result = long_result()
    answer = answer_with_steps(conversation, result)
    finish_as_a_run_does(answer, result)
    stored = ToolResult.objects.get(message=answer)
    first = list(SearchDocument.objects.filter(tool_result=stored).values_list("body", "offset"))
    assert len(first) > 7 * 3

    assert search_index.index_tool_results(message=answer) == len(first)

    again = SearchDocument.objects.filter(tool_result=stored).values_list("body", "offset")
    assert sorted(again) == sorted(first)
