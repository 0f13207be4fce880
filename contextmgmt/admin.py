"""Admin for per-model budgets: budgets, calibration, one active model per role."""

from django.contrib import admin, messages
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest

from contextmgmt.calibration import reset_calibration
from contextmgmt.models import ModelConfig


@admin.register(ModelConfig)
class ModelConfigAdmin(admin.ModelAdmin):
    # Few, short columns and no filter sidebar (a handful of rows; search is enough): the
    # list must fit a 1280 px screen without scrolling sideways.
    list_display = (
        "name",
        "model",
        "role_name",
        "is_active",
        "window",
        "input_budget",
        "calibration",
    )
    search_fields = ("name", "model")
    readonly_fields = (
        "usable_budget",
        "effective_budget",
        "token_ratio",
        "token_ratio_samples",
        "created_at",
        "updated_at",
    )
    fieldsets = (
        (None, {"fields": ("name", "model", "role", "is_active", "supports_vision")}),
        ("Endpoint", {"fields": ("base_url", "api_key_env")}),
        (
            "Token budget",
            {
                "fields": ("context_size", "max_output_tokens", "usable_budget"),
                "description": (
                    "Usable input = context size - max output - 4,000 system-prompt reserve, "
                    "never below 4,000."
                ),
            },
        ),
        (
            "Calibration",
            {
                "fields": ("token_ratio", "token_ratio_samples", "effective_budget"),
                "description": (
                    "Ratio of the provider's reported input tokens to fimone's estimate, "
                    "learnt from real calls. Above 1 it shrinks the effective budget."
                ),
            },
        ),
        ("History", {"fields": ("created_at", "updated_at")}),
    )
    actions = ("reset_calibration_action",)
    # Endpoints are HTTPS unless the admin types http:// (local vLLM, Ollama).
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    @admin.display(description="usable input tokens")
    def usable_budget(self, obj: ModelConfig) -> str:
        return _unless_invalid(obj) or f"{obj.usable_input_tokens:,}"

    @admin.display(description="effective input tokens")
    def effective_budget(self, obj: ModelConfig) -> str:
        return _unless_invalid(obj) or f"{obj.effective_input_tokens:,}"

    @admin.display(description="role", ordering="role")
    def role_name(self, obj: ModelConfig) -> str:
        return obj.role

    @admin.display(description="context / output", ordering="context_size")
    def window(self, obj: ModelConfig) -> str:
        return f"{obj.context_size:,} / {obj.max_output_tokens:,}"

    @admin.display(description="input (effective)")
    def input_budget(self, obj: ModelConfig) -> str:
        invalid = _unless_invalid(obj)
        if invalid:
            return invalid
        usable, effective = obj.usable_input_tokens, obj.effective_input_tokens
        return f"{usable:,}" if usable == effective else f"{usable:,} ({effective:,})"

    @admin.display(description="ratio (samples)")
    def calibration(self, obj: ModelConfig) -> str:
        if not obj.token_ratio_samples:
            return "not calibrated"
        return f"{obj.token_ratio:.3f} ({obj.token_ratio_samples})"

    @admin.action(description="Reset calibration")
    def reset_calibration_action(self, request: HttpRequest, queryset: QuerySet) -> None:
        count = reset_calibration(model_config_ids=list(queryset.values_list("pk", flat=True)))
        self.message_user(
            request, f"Calibration reset for {count} model configuration(s).", messages.SUCCESS
        )


def _unless_invalid(obj: ModelConfig) -> str:
    """What a budget read-out shows instead of a number that would contradict the form."""
    if obj.pk is None and not obj.context_size:
        return "-"
    if obj.budget_errors():
        return "not computed: fix the token fields"
    return ""
