"""Admin for model configurations: budgets, calibration, provider profile, one active model
per role."""

from django.contrib import admin, messages
from django.db import models
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.html import format_html_join
from django.utils.translation import gettext, ngettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from contextmgmt import profiles
from contextmgmt.calibration import describe_weights, reset_calibration
from contextmgmt.models import ModelConfig
from contextmgmt.numbers import grouped

ROLE_LABELS: dict[str, Promise] = {
    ModelConfig.Role.MAIN: pgettext_lazy("model role, short", "Main"),
    ModelConfig.Role.FAST: pgettext_lazy("model role, short", "Fast"),
}


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
        "profile",
    )
    search_fields = ("name", "model")

    class Media:
        css = {"all": ("admin_extra/lists.css",)}

    readonly_fields = (
        "usable_budget",
        "effective_budget",
        "token_ratio",
        "token_ratio_samples",
        "refused",
        "images_refused",
        "class_weights",
        "created_at",
        "updated_at",
    )
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "name",
                    "model",
                    "role",
                    "is_active",
                    "supports_vision",
                    "images_refused",
                )
            },
        ),
        (_("Endpoint"), {"fields": ("base_url", "api_key_env")}),
        (
            _("Token budget"),
            {
                "fields": ("context_size", "max_output_tokens", "usable_budget"),
                "description": _(
                    "Usable input = context size - max output - 4,000 system-prompt reserve, "
                    "never below 4,000."
                ),
            },
        ),
        (
            _("Calibration"),
            {
                "fields": (
                    "token_ratio",
                    "token_ratio_samples",
                    "class_weights",
                    "effective_budget",
                ),
                "description": _(
                    "Learnt from the provider's usage reports (the last 50 runs): tokens per "
                    "character class for this model's tokenizer, which fimone then estimates "
                    "with; the ratio compares the reported tokens with the base estimate "
                    "(o200k_base) over those reports. Reset forgets both."
                ),
            },
        ),
        (
            _("Provider profile"),
            {
                "fields": (
                    "provider_profile",
                    "profile_auto",
                    "token_limit_param",
                    "send_temperature",
                    "stream_usage",
                    "reasoning_field",
                    "reasoning_echo",
                    "stream",
                    "refused",
                ),
                "description": _(
                    "What this endpoint accepts. Detected from the base URL and the endpoint's "
                    "answers while automatic; editing a setting turns detection off. A "
                    "parameter the endpoint refuses is left out from then on and listed here, "
                    "until the action “Send refused parameters again”."
                ),
            },
        ),
        (_("History"), {"fields": ("created_at", "updated_at")}),
    )
    actions = (
        "reset_calibration_action",
        "read_from_endpoint_action",
        "forget_refusals_action",
        "forget_image_refusal_action",
    )
    # Endpoints are HTTPS unless the admin types http:// (local vLLM, Ollama).
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    # Where a row's key is sent is a permission of its own (docs/operations.md, "Who may
    # change what in the admin"); without it these show read-only, on new rows too.
    ENDPOINT_FIELDS = ("base_url", "api_key_env")
    ENDPOINT_PERMISSION = "contextmgmt.change_modelconfig_endpoint"

    def get_readonly_fields(
        self, request: HttpRequest, obj: ModelConfig | None = None
    ) -> tuple[str, ...]:
        fields = tuple(super().get_readonly_fields(request, obj))
        if request.user.has_perm(self.ENDPOINT_PERMISSION):
            return fields
        return fields + self.ENDPOINT_FIELDS

    @admin.display(description=_("usable input tokens"))
    def usable_budget(self, obj: ModelConfig) -> str:
        return _unless_invalid(obj) or grouped(obj.usable_input_tokens)

    @admin.display(description=_("effective input tokens"))
    def effective_budget(self, obj: ModelConfig) -> str:
        return _unless_invalid(obj) or grouped(obj.effective_input_tokens)

    @admin.display(description=_("role"), ordering="role")
    def role_name(self, obj: ModelConfig) -> str:
        # A short word in the reader's language (the choices' long labels would widen the
        # column; the raw code is not a word).
        return str(ROLE_LABELS.get(obj.role, obj.role))

    @admin.display(description=_("context / out"), ordering="context_size")
    def window(self, obj: ModelConfig) -> str:
        return f"{grouped(obj.context_size)} / {grouped(obj.max_output_tokens)}"

    @admin.display(description=_("input"))
    def input_budget(self, obj: ModelConfig) -> str:
        invalid = _unless_invalid(obj)
        if invalid:
            return invalid
        usable, effective = obj.usable_input_tokens, obj.effective_input_tokens
        if usable == effective:
            return grouped(usable)
        return f"{grouped(usable)} ({grouped(effective)})"

    @admin.display(description=_("profile"), ordering="provider_profile")
    def profile(self, obj: ModelConfig) -> str:
        # "openai_compatible" wraps at its underscore: the column stays narrow.
        return obj.provider_profile.replace("_", "_\u200b")

    @admin.display(description=_("class weights (vs base)"))
    def class_weights(self, obj: ModelConfig) -> str:
        moved = describe_weights(obj.token_weights)
        if not moved:
            return (
                gettext("base weights")
                if not obj.token_weights
                else gettext("base weights (fitted)")
            )
        return format_html_join(
            ", ", "{}: {} (×{})", ((n, grouped(w, 3), grouped(r, 2)) for n, w, r in moved)
        )

    @admin.display(description=_("ratio (samples)"))
    def calibration(self, obj: ModelConfig) -> str:
        if not obj.token_ratio_samples:
            return gettext("not calibrated")
        return f"{grouped(obj.token_ratio, 3)} ({grouped(obj.token_ratio_samples)})"

    @admin.display(description=_("refused parameters"))
    def refused(self, obj: ModelConfig) -> str:
        if not obj.refused_params:
            return gettext("none")
        return "; ".join(
            f"{r.get('param')} ({r.get('at', '')[:19]}): {r.get('message', '')}"
            for r in obj.refused_params
        )

    @admin.display(description=_("images refused by the endpoint"))
    def images_refused(self, obj: ModelConfig) -> str:
        if obj.images_refused_at is None:
            return gettext("no")
        when = timezone.localtime(obj.images_refused_at).strftime("%Y-%m-%d %H:%M %Z")
        return gettext(
            "on %(when)s: %(message)s — the model gets image descriptions instead, whatever "
            "“supports images” says, until the action “Send images again”."
        ) % {"when": when, "message": obj.images_refused_message}

    def save_model(
        self, request: HttpRequest, obj: ModelConfig, form: ModelForm, change: bool
    ) -> None:
        edited = set(form.changed_data)
        if change and edited & {"base_url", "model"}:
            # Refusals were the old endpoint's answers: the new one may take the parameters
            # and see images. Undone first, so that settings edited with it win below.
            if obj.refused_params and not edited & {"provider_profile", *profiles.PROFILE_FIELDS}:
                profiles.undo_refusals(obj)
            obj.refused_params = []
            obj.images_refused_at, obj.images_refused_message = None, ""
        if edited & {"provider_profile", *profiles.PROFILE_FIELDS} and "profile_auto" not in edited:
            obj.profile_auto = False  # the admin's own settings win over detection
        elif obj.profile_auto and (not change or edited & {"base_url", "model", "profile_auto"}):
            profiles.detect_profile(obj)
        super().save_model(request, obj, form, change)

    # Every action changes the rows it is run on: "change" permission, never view alone.
    @admin.action(description=_("Read context size from the endpoint"), permissions=["change"])
    def read_from_endpoint_action(self, request: HttpRequest, queryset: QuerySet) -> None:
        for row in queryset:
            found, changed = profiles.read_from_endpoint(row)
            if found.context_size is None:
                self.message_user(request, f"{row.name}: {found.source}.", messages.WARNING)
                continue
            if "max_output_tokens" in changed:
                text = gettext(
                    "%(name)s: context size %(context)s, max output %(output)s (%(source)s)."
                )
            else:
                text = gettext("%(name)s: context size %(context)s (%(source)s).")
            text %= {
                "name": row.name,
                "context": grouped(row.context_size),
                "output": grouped(row.max_output_tokens),
                "source": found.source,
            }
            note = f" {found.note}" if found.note else ""
            self.message_user(request, text + note, messages.SUCCESS)

    @admin.action(description=_("Reset calibration"), permissions=["change"])
    def reset_calibration_action(self, request: HttpRequest, queryset: QuerySet) -> None:
        count = reset_calibration(model_config_ids=_ids(queryset))
        text = ngettext(
            "Calibration reset for %(count)d model configuration.",
            "Calibration reset for %(count)d model configurations.",
            count,
        )
        self.message_user(request, text % {"count": count}, messages.SUCCESS)

    @admin.action(
        description=_("Send refused parameters again (forget the endpoint's refusals)"),
        permissions=["change"],
    )
    def forget_refusals_action(self, request: HttpRequest, queryset: QuerySet) -> None:
        count = profiles.forget_refusals(model_config_ids=_ids(queryset))
        text = ngettext(
            "Refused parameters will be sent again to %(count)d model configuration.",
            "Refused parameters will be sent again to %(count)d model configurations.",
            count,
        )
        self.message_user(request, text % {"count": count}, messages.SUCCESS)

    @admin.action(
        description=_("Send images again (forget the endpoint's refusal)"), permissions=["change"]
    )
    def forget_image_refusal_action(self, request: HttpRequest, queryset: QuerySet) -> None:
        count = profiles.forget_image_refusal(model_config_ids=_ids(queryset))
        text = ngettext(
            "Images will be sent again to %(count)d model configuration.",
            "Images will be sent again to %(count)d model configurations.",
            count,
        )
        self.message_user(request, text % {"count": count}, messages.SUCCESS)


def _unless_invalid(obj: ModelConfig) -> str:
    """What a budget read-out shows instead of a number that would contradict the form."""
    if obj.pk is None and not obj.context_size:
        return "-"
    if obj.budget_errors():
        return gettext("not computed: fix the token fields")
    return ""


def _ids(queryset: QuerySet) -> list[int]:
    """The selected rows' ids, for a service that takes ids."""
    return list(queryset.values_list("pk", flat=True))
