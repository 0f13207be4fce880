"""What follows a delete, whatever deleted the rows (the API, the admin, a cascade from a
deleted user): an attachment's file leaves the disk, and a conversation's run stops.

The API, the admin (a conversation, a user, a single attachment), a cascade from a deleted
user or conversation and ``cleanup_uploads`` all delete rows through Django's collector,
which sends ``post_delete`` for every attachment (having a receiver also turns off the
collector's signal-less fast path, so cascades are seen too). The file is removed only once
the transaction commits: a rolled-back delete keeps both row and file.

A deleted conversation's running answer is looked up before the rows go; once the delete
commits, its run is cancelled through the run's control group (so in whichever server
process it runs) and the conversation's sockets are closed (``chat.runs``).

A tool server row's save or delete makes every process read the tool servers again on its
next run (``chat.tool_servers.pool``); a model configuration's, look the models and budgets
up again (``chat.runs.preparation``; bulk writes replace the token themselves,
``contextmgmt.generations``). A changed setting of the models (tests change settings) does
the same in this process.
"""

from __future__ import annotations

import logging

from django.core.files.storage import Storage
from django.core.signals import setting_changed
from django.db import transaction
from django.db.models.signals import post_delete, post_save, pre_delete
from django.dispatch import receiver

from chat import runs
from chat.models import Attachment, Conversation, Message
from chat.models.tool_servers import ToolServer
from chat.runs import preparation
from chat.tool_servers import pool as tool_servers
from contextmgmt import generations
from contextmgmt.models import ModelConfig

logger = logging.getLogger(__name__)


@receiver(post_delete, sender=Attachment, dispatch_uid="chat.attachment_file_removal")
def remove_attachment_file(sender, instance: Attachment, using: str, **kwargs) -> None:
    storage, name = instance.file.storage, instance.file.name
    if not name:
        return
    transaction.on_commit(lambda: delete_stored_file(storage, name), using=using)


def delete_stored_file(storage: Storage, name: str) -> None:
    try:
        storage.delete(name)
    except OSError:
        logger.warning("could not delete attachment file %s", name, exc_info=True)


@receiver(pre_delete, sender=Conversation, dispatch_uid="chat.conversation_stop_runs")
def stop_runs_of_deleted_conversation(sender, instance: Conversation, using: str, **kw) -> None:
    """Its running answers' runs are stopped once the delete commits. Their run ids are
    read now, before the rows go; the delete's own transaction holds the callback, so a
    delete that fails stops nothing."""
    conversation_id = str(instance.pk)
    run_ids = [
        run_id
        for run_id in Message.objects.filter(
            conversation_id=instance.pk,
            role=Message.Role.ASSISTANT,
            status=Message.Status.RUNNING,
        ).values_list("run_id", flat=True)
        if run_id
    ]
    transaction.on_commit(
        lambda: runs.conversation_deleted(conversation_id=conversation_id, running_run_ids=run_ids),
        using=using,
    )


@receiver(post_save, sender=ToolServer, dispatch_uid="chat.tool_server_saved")
@receiver(post_delete, sender=ToolServer, dispatch_uid="chat.tool_server_deleted")
def tool_servers_changed(sender, **kwargs) -> None:
    """Every process reads the tool servers again on its next run, once the change is
    committed (before that, another process would read and keep the old rows)."""
    transaction.on_commit(tool_servers.forget_cached_servers)


@receiver(post_save, sender=ModelConfig, dispatch_uid="chat.model_config_saved")
@receiver(post_delete, sender=ModelConfig, dispatch_uid="chat.model_config_deleted")
def model_configs_changed(sender, **kwargs) -> None:
    """Every process looks the models and budgets up again on its next run, once the
    change is committed."""
    generations.replace_on_commit(generations.MODEL_CONFIGS)


@receiver(setting_changed, dispatch_uid="chat.model_settings_changed")
def model_settings_changed(sender, setting: str, **kwargs) -> None:
    """The environment's models and budgets come from settings, read at lookup time."""
    if setting.startswith(("LLM_", "FAST_LLM_")):
        preparation.forget_models()
