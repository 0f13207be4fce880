"""Admin for per-model budgets (SPEC R5, RW.2): budgets, calibration, one active per role."""

from django.contrib import admin, messages
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest

from contextmgmt.calibration import reset_calibration
from contextmgmt.models import ModelConfig


@admin.register(ModelConfig)
class ModelConfigAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "model",
        "role",
        "is_active",
        "context_size",
        "max_output_tokens",
        "usable_budget",
        "effective_budget",
        "calibration",
    )
    list_filter = ("role", "is_active", "supports_vision")
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
            "Budget (SPEC R5)",
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
        if obj.pk is None and not obj.context_size:
            return "-"
        return f"{obj.usable_input_tokens:,}"

    @admin.display(description="effective input tokens")
    def effective_budget(self, obj: ModelConfig) -> str:
        if obj.pk is None and not obj.context_size:
            return "-"
        return f"{obj.effective_input_tokens:,}"

    @admin.display(description="token ratio (samples)")
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
