"""An attachment's file leaves the disk with its row, whatever deleted the row.

The API, the admin (a conversation, a user, a single attachment), a cascade from a deleted
user or conversation and ``cleanup_uploads`` all delete rows through Django's collector,
which sends ``post_delete`` for every attachment (having a receiver also turns off the
collector's signal-less fast path, so cascades are seen too). The file is removed only once
the transaction commits: a rolled-back delete keeps both row and file.
"""

from __future__ import annotations

import logging

from django.core.files.storage import Storage
from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver

from chat.models import Attachment

logger = logging.getLogger(__name__)


@receiver(post_delete, sender=Attachment, dispatch_uid="chat.attachment_file_removal")
def remove_attachment_file(sender, instance: Attachment, using: str, **kwargs) -> None:
    if not instance.file:
        return
    storage, name = instance.file.storage, instance.file.name
    transaction.on_commit(lambda: delete_stored_file(storage, name), using=using)


def delete_stored_file(storage: Storage, name: str) -> None:
    try:
        storage.delete(name)
    except OSError:
        logger.warning("could not delete attachment file %s", name, exc_info=True)
