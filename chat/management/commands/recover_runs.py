"""Mark runs a dead server left unfinished as interrupted (run once at server start)."""

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.core.management.base import BaseCommand

from chat import run_control
from chat.services import messages_mark_interrupted


class Command(BaseCommand):
    help = "Mark messages left running/pending by a previous server process as interrupted."

    def handle(self, *args, **options) -> None:
        layer = get_channel_layer()
        if layer is not None and not run_control.is_single_process(layer):
            # Several server processes (issue 10): interrupt only runs no process answers for.
            count = async_to_sync(run_control.reclaim_orphans)(layer)
        else:
            count = messages_mark_interrupted()
        if count:
            self.stdout.write(f"Marked {count} unfinished message(s) as interrupted.")
