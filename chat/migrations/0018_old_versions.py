"""Edits, retries and regenerations stored before versions existed become versions: the
rows stay as they were shown (the hidden ones hidden), now with the links that let the user
switch back to them (chat.versions.links_of_old_rows). Conversations that already have
versions are left alone."""

from django.db import migrations
from django.db.models import Q
from django.db.models.fields.json import KT


def link_old_versions(apps, schema_editor):
    from chat.versions import OldRow, links_of_old_rows

    Message = apps.get_model("chat", "Message")
    linked = Message.objects.filter(Q(version_of__isnull=False) | Q(branch_of__isnull=False))
    conversations = (
        Message.objects.filter(superseded_by__isnull=False)
        .exclude(conversation_id__in=linked.values("conversation_id"))
        .order_by()
        .values_list("conversation_id", flat=True)
        .distinct()
    )
    for conversation_id in list(conversations):
        rows = (
            Message.objects.filter(conversation_id=conversation_id)
            .annotate(retry=KT("metadata__retry_of"))
            .order_by("id")
            .values_list("id", "role", "kind", "superseded_by_id", "retry")
        )
        old = [
            OldRow(pk, role, kind, superseded_by, _int(retry))
            for pk, role, kind, superseded_by, retry in rows
        ]
        for pk, (version_of, branch_of) in links_of_old_rows(old).items():
            Message.objects.filter(pk=pk).update(version_of_id=version_of, branch_of_id=branch_of)


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class Migration(migrations.Migration):
    dependencies = [("chat", "0017_message_relations")]

    operations = [migrations.RunPython(link_old_versions, migrations.RunPython.noop)]
