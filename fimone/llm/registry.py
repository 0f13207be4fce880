"""Which model answers a role: the one Django-aware part of ``fimone.llm``.

Sources, first that applies wins:

1. ``db`` — the active ``contextmgmt.ModelConfig`` row of the role (an admin's choice). Its
   ``base_url`` / ``api_key_env`` may be blank: then the endpoint and key of the
   environment apply (an admin can add a model on the configured endpoint).
2. ``env`` — settings ``LLM_BASE_URL``, ``LLM_API_KEY``, ``LLM_MODEL``; the fast role reads
   ``FAST_LLM_*`` and falls back to the main values field by field, so ``FAST_LLM_MODEL``
   alone means "same endpoint, other model". A role counts as configured when it names a
   model or a base URL.
3. ``offline`` — fimone's built-in offline model.

The fast role with neither a row nor ``FAST_LLM_*`` settings uses whatever the main role
uses. Each spec carries the endpoint's provider profile: the row's (``contextmgmt.profiles``),
or for the environment ``LLM_PROVIDER_PROFILE`` / detection from the base URL. What the
client learns about an endpoint (a refused parameter, where reasoning arrives, that it
refuses images) is stored on the row; for the environment it lasts as long as the process.
The shared object that learnt a refusal leaves the cache, so that an admin's reset of the
refusal is not undone by handing it out again.
A row whose endpoint refused images makes specs that do not see (``ModelConfig.sees_images``).

``get_llm`` is sync (it may query the database): async code calls it through
``sync_to_async``. Django and the models are imported inside the functions, so that importing
``fimone.llm`` stays free of Django.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import asdict, dataclass
from typing import Any, Literal

from contextmgmt.core.llm import LLM
from contextmgmt.core.providers import PROFILES, ProviderProfile, detect
from fimone.llm.offline.model import OFFLINE_MODEL_NAME, OfflineLLM
from fimone.llm.providers.openai_client import OpenAIChatLLM

log = logging.getLogger(__name__)

Role = Literal["main", "fast"]
ROLES: tuple[Role, ...] = ("main", "fast")


@dataclass(frozen=True, slots=True)
class LLMSpec:
    """Everything needed to build a role's LLM; equal specs share one LLM object."""

    role: str
    source: str  # "db" | "env" | "offline"
    model: str
    base_url: str = ""
    api_key: str = ""
    supports_vision: bool = True
    timeout: float = 120.0
    max_retries: int = 2
    rate_limit_retries: int = 5
    rate_limit_max_wait: float = 60.0
    profile: ProviderProfile = ProviderProfile()
    model_config_id: int | None = None

    @property
    def offline(self) -> bool:
        return self.source == "offline"


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"unknown LLM role {role!r}; expected one of {ROLES}")


def _env_profile(role: str, base_url: str, model: str) -> ProviderProfile:
    from django.conf import settings

    name = settings.LLM_PROVIDER_PROFILE
    if role == "fast" and settings.FAST_LLM_PROVIDER_PROFILE:
        name = settings.FAST_LLM_PROVIDER_PROFILE
    if name and name not in PROFILES:
        log.warning("unknown LLM provider profile %r; detecting it instead", name)
    return PROFILES.get(name) or detect(base_url, model)


def _env_endpoint(role: str) -> tuple[str, str, str]:
    """(model, base_url, api_key) from settings for ``role``, fast falling back to main."""
    from django.conf import settings

    model = settings.LLM_MODEL
    base_url = settings.LLM_BASE_URL
    api_key = settings.LLM_API_KEY
    if role == "fast":
        model = settings.FAST_LLM_MODEL or model
        base_url = settings.FAST_LLM_BASE_URL or base_url
        api_key = settings.FAST_LLM_API_KEY or api_key
    return model, base_url, api_key


def _env_vision(role: str) -> bool:
    """Whether the environment's model for ``role`` can see images (fast: main's if unset)."""
    from django.conf import settings

    main = bool(getattr(settings, "LLM_SUPPORTS_VISION", True))
    if role == "fast":
        fast = getattr(settings, "FAST_LLM_SUPPORTS_VISION", None)
        return main if fast is None else bool(fast)
    return main


def _fast_env_configured() -> bool:
    from django.conf import settings

    return bool(settings.FAST_LLM_MODEL or settings.FAST_LLM_BASE_URL)


def _active_row(role: str):
    from contextmgmt.models import ModelConfig

    return ModelConfig.objects.filter(role=role, is_active=True).first()


def resolve_spec(role: Role = "main") -> LLMSpec:
    """The spec of ``role``'s LLM: ModelConfig row > settings > offline (module docstring)."""
    from django.conf import settings

    _check_role(role)
    limits: dict[str, Any] = {
        "timeout": float(settings.LLM_TIMEOUT_SECONDS),
        "max_retries": int(settings.LLM_MAX_RETRIES),
        "rate_limit_retries": int(settings.LLM_RATE_LIMIT_RETRIES),
        "rate_limit_max_wait": float(settings.LLM_RATE_LIMIT_MAX_WAIT_SECONDS),
    }
    row = _active_row(role)
    if row is not None:
        return _row_spec(row, role, limits)
    if role == "fast" and not _fast_env_configured():
        return resolve_spec("main")  # fast not configured: the main model does the fast work
    model, base_url, api_key = _env_endpoint(role)
    if model or base_url:
        return LLMSpec(
            role=role,
            source="env",
            model=model or "default",  # llama.cpp and friends ignore the name
            base_url=base_url,
            api_key=api_key,
            supports_vision=_env_vision(role),
            profile=_env_profile(role, base_url, model),
            **limits,
        )
    return LLMSpec(
        role=role, source="offline", model=OFFLINE_MODEL_NAME, supports_vision=False, **limits
    )


def _row_spec(row, role: str, limits: dict[str, Any]) -> LLMSpec:
    """The spec of a ModelConfig row (blank endpoint or key: the environment's)."""
    from contextmgmt.profiles import endpoint_of, profile_of

    # The key goes only where the operator meant it to (contextmgmt.profiles.endpoint_of).
    endpoint = endpoint_of(row)
    if endpoint.refusal:
        log.warning("ModelConfig %r: no API key sent: %s", row.name, endpoint.refusal)
    elif row.api_key_env and not endpoint.api_key:
        log.warning(
            "ModelConfig %r names API key variable %s, which is not set",
            row.name,
            row.api_key_env,
        )
    return LLMSpec(
        role=role,
        source="db",
        model=row.model,
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        supports_vision=row.sees_images,  # "supports images", unless the endpoint refused them
        profile=profile_of(row),
        model_config_id=row.pk,
        **limits,
    )


# Equal specs share one LLM object, so its SDK clients (and their connection pools) are
# reused across runs instead of rebuilt per message.
_cache: dict[tuple, LLM] = {}
_cache_lock = threading.Lock()
_CACHE_LIMIT = 16


def build_llm(spec: LLMSpec) -> LLM:
    if spec.offline:
        return OfflineLLM()
    return OpenAIChatLLM(
        model=spec.model,
        base_url=spec.base_url or None,
        api_key=spec.api_key or None,
        timeout=spec.timeout,
        max_retries=spec.max_retries,
        rate_limit_retries=spec.rate_limit_retries,
        rate_limit_max_wait=spec.rate_limit_max_wait,
        supports_vision=spec.supports_vision,
        profile=spec.profile,
        on_learn=_learner(spec),
        on_images_refused=_image_learner(spec),
    )


def _limits() -> dict[str, Any]:
    from django.conf import settings

    return {
        "timeout": float(settings.LLM_TIMEOUT_SECONDS),
        "max_retries": int(settings.LLM_MAX_RETRIES),
        "rate_limit_retries": int(settings.LLM_RATE_LIMIT_RETRIES),
        "rate_limit_max_wait": float(settings.LLM_RATE_LIMIT_MAX_WAIT_SECONDS),
    }


def get_llm_for_config(config_id: int) -> LLM:
    """The LLM of one main-role ModelConfig row, active or not: a conversation's pick.
    An id that is gone (deleted since) gives the main role's default."""
    from contextmgmt.models import ModelConfig

    row = ModelConfig.objects.filter(pk=config_id, role="main").first()
    if row is None:
        return get_llm("main")
    return _shared(_row_spec(row, "main", _limits()))


def get_builtin_llm() -> LLM:
    """fimone's built-in offline model, whatever is configured: a conversation's pick."""
    return _shared(
        LLMSpec(
            role="main",
            source="offline",
            model=OFFLINE_MODEL_NAME,
            supports_vision=False,
            **_limits(),
        )
    )


def _learner(spec: LLMSpec):
    """Where the client reports what it learnt about the endpoint: the row, if there is one."""
    if spec.model_config_id is None:
        return None
    config_id = spec.model_config_id

    async def learn(profile: ProviderProfile, param: str | None, message: str) -> None:
        from asgiref.sync import sync_to_async

        from contextmgmt import profiles

        if param is None:
            await sync_to_async(profiles.remember_observation)(
                model_config_id=config_id, profile=profile
            )
        else:
            await sync_to_async(profiles.remember_refusal)(
                model_config_id=config_id, param=param, message=message, profile=profile
            )
            # The object that learnt it leaves the parameter out from now on, yet its key is
            # the spec that sends it: were the admin to reset the refusal, the row's spec
            # would equal that key again. Later lookups build from the row. (Kept when the
            # row could not be written: then it is the only memory of the refusal.)
            _forget_config(config_id)

    return learn


def _image_learner(spec: LLMSpec):
    """Where the client reports that the endpoint refused images: the row, if there is one
    (without one, the client remembers it for the process)."""
    if spec.model_config_id is None:
        return None
    config_id = spec.model_config_id

    async def refused(message: str) -> None:
        from asgiref.sync import sync_to_async

        from contextmgmt import profiles

        try:
            await sync_to_async(profiles.remember_image_refusal)(
                model_config_id=config_id, message=message
            )
        finally:
            # The object that learnt it sends text from now on, yet its key is the spec of a
            # row that sees: were the admin to reset the refusal, the row's spec would equal
            # it again. Later lookups build from the row (its spec no longer sees).
            _forget_config(config_id)

    return refused


def get_llm(role: Role = "main") -> LLM:
    """The LLM for ``role`` ("main" or "fast"), by the precedence of the module docstring."""
    return _shared(resolve_spec(role))


def _shared(spec: LLMSpec) -> LLM:
    """One LLM object per distinct spec."""
    key = (
        spec.source == "offline",
        spec.model,
        spec.base_url,
        spec.api_key,
        spec.timeout,
        spec.max_retries,
        spec.rate_limit_retries,
        spec.rate_limit_max_wait,
        spec.supports_vision,
        spec.profile,
        spec.model_config_id,  # last: ``_forget_config`` reads it
    )
    with _cache_lock:
        llm = _cache.pop(key, None)
        if llm is None:
            if len(_cache) >= _CACHE_LIMIT:
                # The least recently used goes (dicts keep insertion order, and a hit is
                # re-inserted below), not every model at once: each would be rebuilt, its
                # connections opened again.
                del _cache[next(iter(_cache))]
            llm = build_llm(spec)
        _cache[key] = llm
    return llm


def _forget_config(config_id: int) -> None:
    """Drop the shared LLM objects of one ModelConfig row (runs holding one keep it)."""
    with _cache_lock:
        for key in [k for k in _cache if k[-1] == config_id]:
            del _cache[key]


def describe_llm(role: Role = "main") -> dict[str, Any]:
    """What the UI shows about ``role``'s model; never the key."""
    spec = resolve_spec(role)
    info = asdict(spec)
    del info["api_key"]
    info.update(
        model_name=spec.model,
        offline=spec.offline,
        has_api_key=bool(spec.api_key),
    )
    return info
