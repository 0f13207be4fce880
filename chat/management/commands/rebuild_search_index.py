"""Recompute the full-text index from the stored messages and titles, and (when no
conversation is named) the passages of every project's files.

Needed after restoring a backup taken without the index, or after a change to what is
indexed; the running services keep the index in step otherwise (docs/operations.md).
"""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from chat.models import Conversation
from chat.search import index as search_index


class Command(BaseCommand):
    help = (
        "Rebuild the full-text search index of conversations (all, or the given ids) and, "
        "with no ids, of project files."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("conversation_ids", nargs="*", help="only these conversations")

    def handle(self, *args, conversation_ids, **options) -> None:
        conversations = Conversation.objects.only("id", "title", "created_at")
        if conversation_ids:
            try:
                conversations = conversations.filter(pk__in=conversation_ids)
                found = {str(c.pk) for c in conversations}
            except ValidationError as exc:
                raise CommandError(f"Not a conversation id: {exc.messages[0]}") from exc
            missing = set(conversation_ids) - found
            if missing:
                raise CommandError(f"No conversation with id {', '.join(sorted(missing))}.")
        count = search_index.rebuild(conversations=conversations)
        files = 0 if conversation_ids else search_index.rebuild_project_files()
        if not conversation_ids and connection.vendor == "sqlite":
            # Everything was recomputed: let FTS5 re-read its content table as well, which
            # also repairs an FTS table that drifted from it (a restored partial backup).
            with connection.cursor() as cursor:
                cursor.execute(
                    "INSERT INTO chat_searchdocument_fts(chat_searchdocument_fts) "
                    "VALUES ('rebuild')"
                )
        self.stdout.write(
            f"Indexed {count} texts of {conversations.count()} conversations"
            + ("." if conversation_ids else f" and {files} passages of project files.")
        )
