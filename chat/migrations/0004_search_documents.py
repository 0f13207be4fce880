"""The full-text index (docs/architecture.md, "Search"): a documents table, the database's own
index over it (FTS5 on SQLite, a GIN expression index on PostgreSQL), filled for the
messages that exist already."""

import django.db.models.deletion
from django.db import migrations, models

# External content: FTS5 keeps only its index and reads the words from chat_searchdocument;
# the triggers keep the two in step whatever writes the table (ORM, cascades, flush).
SQLITE_CREATE = [
    """CREATE VIRTUAL TABLE chat_searchdocument_fts USING fts5(
        terms, content='chat_searchdocument', content_rowid='id',
        tokenize='unicode61 remove_diacritics 0')""",
    """CREATE TRIGGER chat_searchdocument_fts_insert AFTER INSERT ON chat_searchdocument BEGIN
        INSERT INTO chat_searchdocument_fts(rowid, terms) VALUES (new.id, new.terms); END""",
    """CREATE TRIGGER chat_searchdocument_fts_delete AFTER DELETE ON chat_searchdocument BEGIN
        INSERT INTO chat_searchdocument_fts(chat_searchdocument_fts, rowid, terms) VALUES ('delete', old.id, old.terms);
        END""",
    """CREATE TRIGGER chat_searchdocument_fts_update AFTER UPDATE ON chat_searchdocument BEGIN
        INSERT INTO chat_searchdocument_fts(chat_searchdocument_fts, rowid, terms) VALUES ('delete', old.id, old.terms);
        INSERT INTO chat_searchdocument_fts(rowid, terms) VALUES (new.id, new.terms); END""",
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS chat_searchdocument_fts_insert",
    "DROP TRIGGER IF EXISTS chat_searchdocument_fts_delete",
    "DROP TRIGGER IF EXISTS chat_searchdocument_fts_update",
    "DROP TABLE IF EXISTS chat_searchdocument_fts",
]
GIN_NAME = "searchdoc_terms_gin"


def _gin_index():
    from django.contrib.postgres.indexes import GinIndex
    from django.contrib.postgres.search import SearchVector

    # The same expression chat.search.conversations queries with, so that PostgreSQL uses the index.
    return GinIndex(SearchVector("terms", config="simple"), name=GIN_NAME)


def create_text_index(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        for sql in SQLITE_CREATE:
            schema_editor.execute(sql)
    elif vendor == "postgresql":
        schema_editor.add_index(apps.get_model("chat", "SearchDocument"), _gin_index())


def drop_text_index(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        for sql in SQLITE_DROP:
            schema_editor.execute(sql)
    elif vendor == "postgresql":
        schema_editor.remove_index(apps.get_model("chat", "SearchDocument"), _gin_index())


def index_existing_messages(apps, schema_editor):
    from chat.search.index import message_texts
    from chat.search.text import index_text

    Conversation = apps.get_model("chat", "Conversation")
    Message = apps.get_model("chat", "Message")
    SearchDocument = apps.get_model("chat", "SearchDocument")
    documents = [
        SearchDocument(
            conversation_id=conversation_id,
            kind="title",
            body=title,
            terms=index_text(title),
            created_at=created_at,
        )
        for conversation_id, title, created_at in Conversation.objects.exclude(
            title=""
        ).values_list("id", "title", "created_at")
    ]
    messages = Message.objects.filter(role__in=["user", "assistant"]).exclude(
        role="assistant", status__in=["running", "interrupted"]
    )
    for message in messages.iterator(chunk_size=500):
        for kind, label, text in message_texts(
            role=message.role, content=message.content, metadata=message.metadata
        ):
            documents.append(
                SearchDocument(
                    conversation_id=message.conversation_id,
                    message_id=message.pk,
                    kind=kind,
                    label=label,
                    body=text,
                    terms=index_text(text),
                    created_at=message.created_at,
                )
            )
        if len(documents) >= 500:
            SearchDocument.objects.bulk_create(documents)
            documents = []
    SearchDocument.objects.bulk_create(documents)


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0003_summary_names"),
    ]

    operations = [
        migrations.CreateModel(
            name="SearchDocument",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[("message", "Message"), ("tool", "Tool"), ("title", "Title")],
                        max_length=8,
                    ),
                ),
                ("label", models.CharField(blank=True, default="", max_length=100)),
                ("body", models.TextField()),
                ("terms", models.TextField()),
                ("created_at", models.DateTimeField()),
                (
                    "conversation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="search_documents",
                        to="chat.conversation",
                    ),
                ),
                (
                    "message",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="search_documents",
                        to="chat.message",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(fields=["conversation", "kind"], name="searchdoc_conv_kind"),
                ],
            },
        ),
        migrations.RunPython(create_text_index, drop_text_index),
        migrations.RunPython(index_existing_messages, migrations.RunPython.noop),
    ]
