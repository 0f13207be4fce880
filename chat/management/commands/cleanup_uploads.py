"""Delete uploaded images that were never sent in a message (run by bin/run at start).

An upload that is not sent within a day was abandoned (a closed tab, a removed thumbnail);
keeping it forever would keep a user's picture they never shared. Safe to run at any time,
next to running servers: a file still waiting in an open composer is younger than a day.
"""

import math
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError

from chat.services import attachments_delete_unsent

MIN_HOURS = 1.0
# A century: more is no age any upload can have (and a date that far back overflows).
MAX_HOURS = 100 * 365.25 * 24


class Command(BaseCommand):
    help = "Delete uploads never sent in a message that are older than --hours (default 24)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--hours", type=float, default=24.0)

    def handle(self, *args, hours: float, **options) -> None:
        # Fewer hours would delete uploads still waiting in an open composer (a negative
        # number deleted every unsent one, minutes-old ones included).
        if not math.isfinite(hours) or hours < MIN_HOURS:
            raise CommandError(f"--hours must be at least {MIN_HOURS:g} (got {hours:g}).")
        if hours > MAX_HOURS:
            raise CommandError(
                f"--hours must be at most {MAX_HOURS:,.0f} (a century; got {hours:g})."
            )
        count = attachments_delete_unsent(older_than=timedelta(hours=hours))
        self.stdout.write(f"Deleted {count} unsent upload(s) older than {hours:g} hours.")
