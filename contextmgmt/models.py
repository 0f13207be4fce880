"""Per-model budgets and provider profiles, editable in the admin (docs/architecture.md)."""

import re

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from contextmgmt.core.budget import (
    MAX_CONTEXT_SIZE,
    MIN_INPUT_BUDGET,
    SYSTEM_PROMPT_RESERVE,
    effective_input_tokens,
    usable_input_tokens,
)
from contextmgmt.numbers import grouped
from contextmgmt.secrets import secret_env_refusal

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ModelConfig(models.Model):
    class Role(models.TextChoices):
        MAIN = "main", _("Main (ReAct, answers)")
        FAST = "fast", _("Fast (DAG steps, compaction)")

    name = models.CharField(_("display name"), max_length=100)
    model = models.CharField(_("provider model id"), max_length=200)
    role = models.CharField(
        max_length=8, choices=Role.choices, default=Role.MAIN, verbose_name=_("role")
    )
    base_url = models.URLField(max_length=500, blank=True, default="", verbose_name=_("base URL"))
    api_key_env = models.CharField(
        _("API key environment variable"),
        max_length=100,
        blank=True,
        default="",
        help_text=_("Name of the environment variable that holds the key; never the key itself."),
    )
    context_size = models.PositiveIntegerField(default=128_000, verbose_name=_("context size"))
    max_output_tokens = models.PositiveIntegerField(
        default=64_000, verbose_name=_("max output tokens")
    )
    supports_vision = models.BooleanField(default=True, verbose_name=_("supports images"))
    is_active = models.BooleanField(_("active"), default=False)
    # Calibration (contextmgmt.calibration): the class weights fitted to this model's usage
    # reports (empty: the base weights); the reported tokens / the base estimate over the
    # samples they were fitted to; how many samples were recorded in all. A ratio without
    # weights was learnt before weights existed (it still shrinks the budget).
    token_weights = models.JSONField(default=list, blank=True, verbose_name=_("token weights"))
    token_ratio = models.FloatField(default=1.0, verbose_name=_("token ratio"))
    token_ratio_samples = models.PositiveIntegerField(
        default=0, verbose_name=_("token ratio samples")
    )
    # The provider profile (contextmgmt.core.providers): what this endpoint accepts and where its
    # reasoning text arrives. Detected from the base URL and the endpoint's answers while
    # ``profile_auto`` is on; an admin who edits it turns detection off.
    provider_profile = models.CharField(
        _("provider profile"), max_length=40, blank=True, default="openai_compatible"
    )
    profile_auto = models.BooleanField(
        _("detect automatically"),
        default=True,
        help_text=_("Refine the settings below from the base URL and the endpoint's answers."),
    )
    token_limit_param = models.CharField(
        _("token-limit parameter"),
        max_length=24,
        choices=[("max_tokens", "max_tokens"), ("max_completion_tokens", "max_completion_tokens")],
        default="max_tokens",
    )
    send_temperature = models.BooleanField(_("may send temperature"), default=True)
    stream_usage = models.BooleanField(
        _("accepts stream_options (usage in streams)"),
        default=True,
        help_text=_("Off: streamed usage is estimated and marked so."),
    )
    reasoning_field = models.CharField(
        _("reasoning text arrives in"),
        max_length=24,
        blank=True,
        choices=[
            ("", _("either field (not seen yet)")),
            ("reasoning_content", "reasoning_content"),
            ("reasoning", "reasoning"),
        ],
        default="",
    )
    reasoning_echo = models.BooleanField(
        _("sends a tool step's reasoning back"),
        default=False,
        help_text=_(
            "Within one answer, a tool-calling step goes back with its reasoning_content "
            "(DeepSeek's thinking mode requires it; others ignore or refuse it)."
        ),
    )
    stream = models.BooleanField(
        _("may stream"),
        default=True,
        help_text=_(
            "Off: every answer is asked whole and arrives at once (the endpoint refused to "
            "stream this model, e.g. an organisation OpenAI has not verified)."
        ),
    )
    # Parameters the endpoint refused with a 400, newest last: [{param, message, at}].
    refused_params = models.JSONField(_("refused parameters"), default=list, blank=True)
    # When the endpoint answered a request holding images with a 400 saying it takes none
    # (fimone.llm.providers.vision), and what it said. Learnt, not configured: "supports images"
    # stays as the admin set it, and this overrides it until an admin resets it (or points the row
    # at another endpoint), so every process sends descriptions instead of failing first.
    images_refused_at = models.DateTimeField(_("images refused at"), null=True, blank=True)
    images_refused_message = models.CharField(
        _("images refusal message"), max_length=300, blank=True, default=""
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated"))

    class Meta:
        ordering = ["role", "name"]
        verbose_name = _("model configuration")
        verbose_name_plural = _("model configurations")
        # Where a row's key goes is a permission of its own (docs/operations.md, "Who may
        # change what in the admin"): "change" alone edits budgets and profiles.
        permissions = [
            ("change_modelconfig_endpoint", _("Can change a model's base URL and key variable"))
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["role"], condition=Q(is_active=True), name="one_active_model_per_role"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.role}{', active' if self.is_active else ''})"

    @property
    def sees_images(self) -> bool:
        """Whether the model gets pixels: configured to, and its endpoint has not refused them."""
        return self.supports_vision and self.images_refused_at is None

    @property
    def usable_input_tokens(self) -> int:
        return usable_input_tokens(self.context_size, self.max_output_tokens)

    @property
    def effective_input_tokens(self) -> int:
        """The usable budget after calibration (see contextmgmt.calibration)."""
        ratio = 1.0 if self.token_weights else self.token_ratio
        return effective_input_tokens(self.usable_input_tokens, ratio)

    def budget_errors(self) -> dict[str, str]:
        """What is wrong with the context size and max output (empty when they make sense).

        The admin shows the usable budget only when this is empty: a number computed from
        refused values would contradict the error beside it.
        """
        errors: dict[str, str] = {}
        if not self.context_size or self.context_size <= 0:
            errors["context_size"] = gettext("Context size must be a positive number of tokens.")
        elif self.context_size > MAX_CONTEXT_SIZE:
            errors["context_size"] = gettext(
                "%(size)s tokens is larger than any model's context window (limit %(limit)s); "
                "check for a typo."
            ) % {"size": grouped(self.context_size), "limit": grouped(MAX_CONTEXT_SIZE)}
        if self.max_output_tokens is None or self.max_output_tokens <= 0:
            errors["max_output_tokens"] = gettext("Max output tokens must be a positive number.")
        elif self.context_size and self.max_output_tokens >= self.context_size:
            errors["max_output_tokens"] = gettext(
                "Max output tokens must be smaller than the context size (%(size)s)."
            ) % {"size": grouped(self.context_size)}
        elif (
            self.context_size
            and self.context_size - self.max_output_tokens - SYSTEM_PROMPT_RESERVE
            < MIN_INPUT_BUDGET
        ):
            # The run would clamp this to the floor; an admin gets told instead.
            left = self.context_size - self.max_output_tokens - SYSTEM_PROMPT_RESERVE
            errors["max_output_tokens"] = gettext(
                "Leaves %(left)s input tokens (context %(context)s - output %(output)s - "
                "%(reserve)s system-prompt reserve); at least %(minimum)s are needed. Lower max "
                "output tokens or raise the context size."
            ) % {
                "left": grouped(left),
                "context": grouped(self.context_size),
                "output": grouped(self.max_output_tokens),
                "reserve": grouped(SYSTEM_PROMPT_RESERVE),
                "minimum": grouped(MIN_INPUT_BUDGET),
            }
        return errors

    def clean(self) -> None:
        errors = self.budget_errors()
        if self.api_key_env and not ENV_NAME.fullmatch(self.api_key_env):
            errors["api_key_env"] = gettext(
                "Give the name of an environment variable (letters, digits, _), not a key."
            )
        elif self.api_key_env and secret_env_refusal(self.api_key_env):
            errors["api_key_env"] = secret_env_refusal(self.api_key_env)
        if self.is_active:
            clash = (
                ModelConfig.objects.filter(role=self.role, is_active=True)
                .exclude(pk=self.pk)
                .first()
            )
            if clash is not None:
                errors["is_active"] = gettext(
                    "Another %(role)s model is already active (%(name)s); deactivate it first."
                ) % {"role": self.role, "name": clash.name}
        if errors:
            raise ValidationError(errors)


class TokenSample(models.Model):
    """One provider usage report: class counts of what was sent, and the billed tokens."""

    model_config = models.ForeignKey(
        ModelConfig, on_delete=models.CASCADE, related_name="token_samples"
    )
    counts = models.JSONField()  # one count per contextmgmt.core.tokens.CLASSES entry
    fixed_tokens = models.PositiveIntegerField()  # message overheads and images
    reported_tokens = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["model_config", "-id"], name="token_sample_recent")]

    def __str__(self) -> str:
        return f"{self.reported_tokens} tokens reported for {self.model_config_id}"
