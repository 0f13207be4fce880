"""Provider profiles stored on ModelConfig: detection, remembered refusals, discovery.

The profile itself is plain Python (``contextmgmt.core.providers``); this module keeps it on
the model configuration row. The LLM client reports what it learns through the registry
(``remember_refusal``, ``remember_observation``, ``remember_image_refusal``); the admin
shows it, resets refused parameters (``forget_refusals``) and a refusal of images
(``forget_image_refusal``), and reads context sizes from the endpoint
(``read_from_endpoint``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from contextmgmt import generations
from contextmgmt.core.budget import MIN_INPUT_BUDGET, SYSTEM_PROMPT_RESERVE
from contextmgmt.core.providers import ProviderProfile, detect
from contextmgmt.discovery import Discovery, discover
from contextmgmt.models import ModelConfig
from contextmgmt.numbers import grouped
from contextmgmt.secrets import secret_env_refusal

log = logging.getLogger(__name__)

PROFILE_FIELDS = (
    "token_limit_param",
    "send_temperature",
    "stream_usage",
    "reasoning_field",
    "reasoning_echo",
    "stream",
)
KEPT_REFUSALS = 10
# The smallest window a model can be used with: the system-prompt reserve, the smallest
# input budget and one token of answer.
MIN_CONTEXT_SIZE = SYSTEM_PROMPT_RESERVE + MIN_INPUT_BUDGET + 1


def profile_of(row: ModelConfig) -> ProviderProfile:
    return ProviderProfile(
        name=row.provider_profile or "openai_compatible",
        token_limit_param=row.token_limit_param,  # type: ignore[arg-type]
        send_temperature=row.send_temperature,
        stream_usage=row.stream_usage,
        reasoning_field=row.reasoning_field,  # type: ignore[arg-type]
        reasoning_echo=row.reasoning_echo,
        stream=row.stream,
    )


def set_profile(row: ModelConfig, profile: ProviderProfile) -> None:
    """Copy ``profile`` onto ``row`` (not saved)."""
    row.provider_profile = profile.name
    for name in PROFILE_FIELDS:
        setattr(row, name, getattr(profile, name))


@dataclass(frozen=True)
class Endpoint:
    """Where a row's model is called, with which key; ``refusal`` says why no key is sent."""

    base_url: str
    api_key: str
    refusal: str = ""


def endpoint_of(row: ModelConfig) -> Endpoint:
    """The row's base URL and key, else the environment's; a key goes only where the
    operator meant it to (docs/operations.md, "Secrets and the key allow-list"):

    - a named variable only if the allow-list lets it serve as a key (checked here again at
      run time: a row saved before the list was tightened, or written past the admin);
    - the environment's key only to the environment's own endpoint, never to a row's other
      base URL.
    """
    fast = row.role == ModelConfig.Role.FAST
    env_base_url = (fast and settings.FAST_LLM_BASE_URL) or settings.LLM_BASE_URL
    base_url = row.base_url or env_base_url
    if row.api_key_env:
        refusal = secret_env_refusal(row.api_key_env)
        if refusal:
            return Endpoint(base_url, "", refusal)
        return Endpoint(base_url, os.environ.get(row.api_key_env, ""))
    env_key = (fast and settings.FAST_LLM_API_KEY) or settings.LLM_API_KEY
    if env_key and row.base_url and not same_origin(row.base_url, env_base_url):
        return Endpoint(
            base_url,
            "",
            gettext(
                "the environment's key goes only to its own endpoint; name a key variable "
                "for %(url)s"
            )
            % {"url": row.base_url},
        )
    return Endpoint(base_url, env_key)


def same_origin(a: str, b: str) -> bool:
    """Whether two URLs name the same scheme, host and port (what a key is bound to)."""
    first, second = urlsplit(a), urlsplit(b)
    try:
        return (first.scheme.lower(), first.hostname, first.port or _port(first.scheme)) == (
            second.scheme.lower(),
            second.hostname,
            second.port or _port(second.scheme),
        )
    except ValueError:  # a port out of range
        return False


def _port(scheme: str) -> int | None:
    return {"http": 80, "https": 443}.get(scheme.lower())


def detect_profile(row: ModelConfig) -> None:
    """The profile the base URL and model name point to, onto ``row`` (not saved)."""
    set_profile(row, detect(endpoint_of(row).base_url, row.model))


@transaction.atomic
def remember_refusal(
    *, model_config_id: int, param: str, message: str, profile: ProviderProfile
) -> None:
    """The endpoint refused ``param`` (a 400): keep the adapted profile and say why.

    A refusal is a fact about the endpoint, so it is kept even when an admin set the
    profile by hand; the admin sees it under "refused parameters".
    """
    row = ModelConfig.objects.select_for_update().filter(pk=model_config_id).first()
    if row is None:
        return
    set_profile(row, dataclasses.replace(profile, name=row.provider_profile))
    entry = {"param": param, "message": message[:300], "at": timezone.now().isoformat()}
    row.refused_params = [*row.refused_params, entry][-KEPT_REFUSALS:]
    row.save(update_fields=[*PROFILE_FIELDS, "refused_params", "updated_at"])
    log.warning("model %r refused parameter %s; left out from now on", row.name, param)


@transaction.atomic
def forget_refusals(*, model_config_ids: list[int]) -> int:
    """Send these rows' models the parameters their endpoints refused again: what each
    refusal changed in the profile is undone, newest first (so a setting goes back to what it
    was before its first refusal), and the list is emptied. Returns how many rows had
    refusals to forget.

    For an endpoint that has been upgraded or fixed; one that still refuses a parameter costs
    one refused request, after which it is left out and listed again.
    """
    count = 0
    for row in ModelConfig.objects.select_for_update().filter(pk__in=model_config_ids):
        if not row.refused_params:
            continue
        undo_refusals(row)
        row.save(update_fields=[*PROFILE_FIELDS, "refused_params", "updated_at"])
        log.info("model %r: refused parameters forgotten; sent again from now on", row.name)
        count += 1
    return count


def undo_refusals(row: ModelConfig) -> None:
    """Onto ``row`` (not saved): what each refusal changed in its profile undone, newest
    first, and the list emptied."""
    profile = profile_of(row)
    for entry in reversed(row.refused_params):
        profile = profile.sending(str(entry.get("param", "")))
    set_profile(row, dataclasses.replace(profile, name=row.provider_profile))
    row.refused_params = []


def remember_observation(*, model_config_id: int, profile: ProviderProfile) -> None:
    """What the endpoint's answers showed (e.g. where reasoning arrives), while auto."""
    row = ModelConfig.objects.filter(pk=model_config_id, profile_auto=True).first()
    if row is None or profile_of(row) == dataclasses.replace(profile, name=row.provider_profile):
        return
    set_profile(row, dataclasses.replace(profile, name=row.provider_profile))
    row.save(update_fields=[*PROFILE_FIELDS, "updated_at"])
    log.info("model %r: provider profile refined from its answers: %s", row.name, profile)


@transaction.atomic
def remember_image_refusal(*, model_config_id: int, message: str) -> None:
    """The endpoint refused a request's image parts: the row's model gets descriptions from
    now on, in every process (``ModelConfig.sees_images``), until an admin resets it.

    The first refusal is kept: once it is stored no process sends pixels, so a later one
    comes only from a call that was already under way.
    """
    row = ModelConfig.objects.select_for_update().filter(pk=model_config_id).first()
    if row is None or row.images_refused_at is not None:
        return
    row.images_refused_at = timezone.now()
    row.images_refused_message = message[:300]
    row.save(update_fields=["images_refused_at", "images_refused_message", "updated_at"])
    log.warning("model %r refused images; its history is sent as text from now on", row.name)


@transaction.atomic
def forget_image_refusal(*, model_config_ids: list[int]) -> int:
    """Send images to these rows' models again (as "supports images" says); returns how
    many rows had a refusal to forget."""
    count = ModelConfig.objects.filter(
        pk__in=model_config_ids, images_refused_at__isnull=False
    ).update(images_refused_at=None, images_refused_message="", updated_at=timezone.now())
    # A bulk update sends no post_save: runs learn of it from the token (chat/signals.py).
    generations.replace_on_commit(generations.MODEL_CONFIGS)
    return count


def read_from_endpoint(row: ModelConfig) -> tuple[Discovery, list[str]]:
    """Ask the endpoint for the context size (and output limit) and store what it says.

    Returns the discovery and the names of the fields changed. A reported output limit that
    would leave too little input is not taken (the context size alone is).
    """
    endpoint = endpoint_of(row)
    if endpoint.refusal:
        log.warning("model %r: no key sent: %s", row.name, endpoint.refusal)
    found = discover(endpoint.base_url, row.model, endpoint.api_key)
    changed: list[str] = []
    if found.context_size is None:
        return found, changed
    if found.context_size < MIN_CONTEXT_SIZE:
        # Not stored: no answer would fit, and the row's budget would be refused by its form.
        why = gettext(
            "could not read the context size (the endpoint reports %(size)s tokens, fewer "
            "than the %(minimum)s fimone needs)"
        ) % {"size": grouped(found.context_size), "minimum": grouped(MIN_CONTEXT_SIZE)}
        return dataclasses.replace(found, context_size=None, source=why), changed
    if row.profile_auto and found.profile.name != row.provider_profile:
        set_profile(row, found.profile)
        changed += ["provider_profile", *PROFILE_FIELDS]
    row.context_size = found.context_size
    changed.append("context_size")
    output = found.max_output_tokens or row.max_output_tokens
    if _leaves_input(found.context_size, output):
        if output != row.max_output_tokens:
            row.max_output_tokens = output
            changed.append("max_output_tokens")
    else:
        # Keep a quarter of the window for the answer, as a sane default for a small model.
        row.max_output_tokens = max(1, found.context_size // 4)
        changed.append("max_output_tokens")
    row.save(update_fields=[*changed, "updated_at"])
    return found, changed


def _leaves_input(context_size: int, max_output: int) -> bool:
    return context_size - max_output - SYSTEM_PROMPT_RESERVE >= MIN_INPUT_BUDGET
