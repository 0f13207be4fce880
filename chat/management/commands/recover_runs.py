"""Mark runs a dead server left unfinished as interrupted (run once at server start)."""

from django.core.management.base import BaseCommand

from chat import runs


class Command(BaseCommand):
    help = "Mark messages left running/pending by a previous server process as interrupted."

    def handle(self, *args, **options) -> None:
        count = runs.recover_runs()
        if count:
            self.stdout.write(f"Marked {count} unfinished message(s) as interrupted.")
