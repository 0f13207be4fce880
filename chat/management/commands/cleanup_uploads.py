"""Delete uploaded images that were never sent in a message (run by bin/run at start).

An upload that is not sent within a day was abandoned (a closed tab, a removed thumbnail);
keeping it forever would keep a user's picture they never shared. Safe to run at any time,
next to running servers: a file still waiting in an open composer is younger than a day.
"""

from datetime import timedelta

from django.core.management.base import BaseCommand

from chat.services import attachments_delete_unsent


class Command(BaseCommand):
    help = "Delete uploads never sent in a message that are older than --hours (default 24)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--hours", type=float, default=24.0)

    def handle(self, *args, hours: float, **options) -> None:
        count = attachments_delete_unsent(older_than=timedelta(hours=hours))
        self.stdout.write(f"Deleted {count} unsent upload(s) older than {hours:g} hours.")
