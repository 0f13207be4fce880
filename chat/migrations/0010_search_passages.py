"""Long texts indexed as passages (docs/architecture.md, "Search"): each document gets the
offset of its passage, and the documents of texts indexed whole before are cut into
passages; German texts get the parts of their compound words too (``chat.search.text``)."""

import importlib

from django.db import migrations, models

_INDEX = importlib.import_module("chat.migrations.0004_search_documents")


def restore_triggers(apps, schema_editor):
    """SQLite adds the column by rebuilding the table, which drops the triggers that keep
    the FTS5 index in step: they are created again (the rows keep their ids, so the index
    itself is still right)."""
    if schema_editor.connection.vendor != "sqlite":
        return
    for sql in _INDEX.SQLITE_DROP[:3]:
        schema_editor.execute(sql)
    for sql in _INDEX.SQLITE_CREATE[1:]:
        schema_editor.execute(sql)


def reindex(apps, schema_editor):
    from chat.search.index import passage_terms
    from chat.search.passages import PASSAGE_MAX_CHARS, passages
    from chat.search.text import index_text

    SearchDocument = apps.get_model("chat", "SearchDocument")
    # Listed first: SQLite gives no isolation between a query being read and writes.
    long = []
    for pk, body, terms in list(SearchDocument.objects.values_list("pk", "body", "terms")):
        if len(body) > PASSAGE_MAX_CHARS:
            long.append(pk)
        elif index_text(body) != terms:
            SearchDocument.objects.filter(pk=pk).update(terms=index_text(body))
    for document in SearchDocument.objects.filter(pk__in=long):
        SearchDocument.objects.bulk_create(
            [
                SearchDocument(
                    conversation_id=document.conversation_id,
                    message_id=document.message_id,
                    kind=document.kind,
                    label=document.label,
                    body=passage.text,
                    terms=passage_terms(passage),
                    offset=passage.offset,
                    created_at=document.created_at,
                )
                for passage in passages(document.body)
            ]
        )
    SearchDocument.objects.filter(pk__in=long).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0009_more_translated_names"),
    ]

    operations = [
        migrations.AddField(
            model_name="searchdocument",
            name="offset",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(restore_triggers, restore_triggers),
        migrations.RunPython(reindex, migrations.RunPython.noop),
    ]
