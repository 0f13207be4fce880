"""Projects (docs/projects.md): a project's instructions and files shared by its
conversations. A file is an attachment of the project (no conversation); its passages are
search documents of the project. SQLite alters the search documents' conversation column by
rebuilding the table, which drops the triggers that keep the FTS5 index in step: they are
created again (``0010_search_passages.restore_triggers``)."""

import importlib

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

_PASSAGES = importlib.import_module("chat.migrations.0010_search_passages")


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0022_tool_server_health"),
        ("contextmgmt", "0009_may_stream"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="instructions",
            field=models.TextField(blank=True, default="", verbose_name="instructions"),
        ),
        migrations.AddField(
            model_name="searchdocument",
            name="attachment",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="search_documents",
                to="chat.attachment",
            ),
        ),
        migrations.AlterField(
            model_name="attachment",
            name="conversation",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="attachments",
                to="chat.conversation",
                verbose_name="conversation",
            ),
        ),
        migrations.AlterField(
            model_name="searchdocument",
            name="conversation",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="search_documents",
                to="chat.conversation",
            ),
        ),
        migrations.CreateModel(
            name="Project",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=200, verbose_name="name")),
                (
                    "instructions",
                    models.TextField(blank=True, default="", verbose_name="instructions"),
                ),
                (
                    "disabled_tool_sources",
                    models.JSONField(
                        blank=True, default=list, verbose_name="tool sources switched off"
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                ("updated_at", models.DateTimeField(auto_now=True, verbose_name="updated")),
                (
                    "model_config",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="contextmgmt.modelconfig",
                        verbose_name="default model",
                    ),
                ),
                (
                    "owner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="projects",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="owner",
                    ),
                ),
            ],
            options={
                "verbose_name": "project",
                "verbose_name_plural": "projects",
                "ordering": ["-updated_at", "-id"],
            },
        ),
        migrations.AddField(
            model_name="attachment",
            name="project",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="files",
                to="chat.project",
                verbose_name="project",
            ),
        ),
        migrations.AddField(
            model_name="conversation",
            name="project",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="conversations",
                to="chat.project",
                verbose_name="project",
            ),
        ),
        migrations.AddField(
            model_name="searchdocument",
            name="project",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="search_documents",
                to="chat.project",
            ),
        ),
        migrations.AddIndex(
            model_name="searchdocument",
            index=models.Index(fields=["project", "kind"], name="searchdoc_project_kind"),
        ),
        migrations.AddConstraint(
            model_name="attachment",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("conversation__isnull", False), ("project__isnull", True)),
                    models.Q(("conversation__isnull", True), ("project__isnull", False)),
                    _connector="OR",
                ),
                name="attachment_one_home",
            ),
        ),
        migrations.AddIndex(
            model_name="project",
            index=models.Index(fields=["owner", "-updated_at"], name="project_owner_updated"),
        ),
        migrations.RunPython(_PASSAGES.restore_triggers, _PASSAGES.restore_triggers),
    ]
