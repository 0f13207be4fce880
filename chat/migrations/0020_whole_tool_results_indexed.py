"""Tool results found by their whole text (docs/architecture.md, "Search"): a search
document may be a passage of a stored whole result (``tool_result``), and the results
stored before are indexed whole, in place of the previews their answers' steps kept."""

import importlib

import django.db.models.deletion
from django.db import migrations, models

_PASSAGES = importlib.import_module("chat.migrations.0010_search_passages")
# A DAG step's result is indexed from the plan, never stored as a tool result.
_DAG_LABEL = "DAG step"


def index_whole_results(apps, schema_editor):
    from chat.search.index import LABEL_CHARS, passage_terms, tool_result_passages

    Message = apps.get_model("chat", "Message")
    SearchDocument = apps.get_model("chat", "SearchDocument")
    ToolResult = apps.get_model("chat", "ToolResult")
    # Listed first: SQLite gives no isolation between a query being read and writes.
    answers = list(ToolResult.objects.values_list("message_id", flat=True).distinct())
    for answer_id in answers:
        answer = Message.objects.filter(pk=answer_id).first()
        if answer is None or answer.status in ("running", "interrupted"):
            continue  # not indexed while unfinished (as the services keep it)
        question = (
            Message.objects.filter(
                conversation_id=answer.conversation_id,
                role="user",
                created_at__lte=answer.created_at,
                id__lt=answer.pk,
            )
            .order_by("-created_at", "-id")
            .values_list("content", flat=True)
            .first()
        ) or ""
        SearchDocument.objects.filter(
            message_id=answer_id, kind="tool", tool_result__isnull=True
        ).exclude(label__startswith=_DAG_LABEL).delete()
        for pk in list(
            ToolResult.objects.filter(message_id=answer_id).values_list("pk", flat=True)
        ):
            result = ToolResult.objects.get(pk=pk)
            SearchDocument.objects.bulk_create(
                [
                    SearchDocument(
                        conversation_id=result.conversation_id,
                        message_id=answer_id,
                        kind="tool",
                        label=result.name[:LABEL_CHARS],
                        body=passage.text,
                        terms=passage_terms(passage),
                        offset=passage.offset,
                        created_at=answer.created_at,
                        tool_result_id=pk,
                    )
                    for passage in tool_result_passages(
                        name=result.name,
                        arguments=result.arguments,
                        question=question,
                        content=result.content,
                    )
                ],
                batch_size=500,
            )


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0019_conversation_ledger"),
    ]

    operations = [
        # Undone, the field's removal rebuilds the table on SQLite, which drops the
        # triggers: they are restored after it (an operation before it runs after it).
        migrations.RunPython(migrations.RunPython.noop, _PASSAGES.restore_triggers),
        migrations.AddField(
            model_name="searchdocument",
            name="tool_result",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="search_documents",
                to="chat.toolresult",
            ),
        ),
        migrations.RunPython(_PASSAGES.restore_triggers, migrations.RunPython.noop),
        migrations.RunPython(index_whole_results, migrations.RunPython.noop),
    ]
