"""How real providers differ on the wire, for the scripted server's provider-profile switch.

Each profile is written from the provider's documented wire format:

- ``openai``: the reference; usage in streams only with ``stream_options.include_usage``.
- ``openai_reasoning`` (o1/o3/o4/gpt-5): refuses ``max_tokens`` ("Unsupported parameter …
  Use 'max_completion_tokens' instead.") and any temperature but 1 ("Unsupported value …"),
  both 400 ``invalid_request_error`` with ``param``; usage carries
  ``completion_tokens_details.reasoning_tokens`` (counted inside ``completion_tokens``); no
  reasoning text is sent.
- ``vllm``: ``/v1/models`` entries ``owned_by: "vllm"`` with ``max_model_len``; reasoning
  text (with a reasoning parser) in ``delta.reasoning_content``.
- ``llamacpp``: ``/v1/models`` entries ``owned_by: "llamacpp"`` with ``meta.n_ctx_train``;
  ``GET /props`` ``default_generation_settings.n_ctx``; ``reasoning_content`` with
  ``--reasoning-format deepseek``.
- ``ollama`` (its OpenAI compatibility layer): ``stream_options`` ignored, so no usage in
  streams; a tool call arrives whole in one chunk, without ``index``; reasoning in
  ``delta.reasoning``; ``POST /api/show`` gives ``model_info["<arch>.context_length"]`` and
  the Modelfile's ``num_ctx``.
- ``deepseek`` (thinking mode, deepseek-v4 / deepseek-reasoner today): reasoning in
  ``delta.reasoning_content``, reasoning tokens in usage, and a 400 when an assistant message
  with tool calls comes back without its ``reasoning_content``: "The `reasoning_content` in
  the thinking mode must be passed back to the API." (``param``: null). Sources: DeepSeek's
  guide, api-docs.deepseek.com/guides/thinking_mode ("Tool Calls": within a turn that calls
  tools the reasoning must be passed back, else 400; on turns without tool calls it is
  ignored); the error body as reported in github.com/decolua/9router/issues/773 and
  github.com/JohnnyZ93/oai-compatible-copilot/issues/215; the 2025 wording "Missing
  `reasoning_content` field in the assistant message at message index N" in
  github.com/continuedev/continue/issues/9831.
- ``deepseek_legacy`` (deepseek-reasoner, early 2025): the old rule, a 400 when an input
  message carries ``reasoning_content`` (the docs of the time: it must not be sent back; they
  quote no wording, so the message here paraphrases them).
- ``vllm_think_inline`` (Qwen3 on vLLM started without ``--reasoning-parser``): the thinking
  stays in ``content`` as ``<think>\n…</think>\n\n`` before the answer, streamed in small
  pieces so the tags arrive split. Sources: vLLM's "Reasoning Outputs" docs (the parser is
  what moves it to ``reasoning_content``); github.com/vllm-project/vllm/issues/21130 (a
  Qwen3 reply with ``content='<think>\nOkay, …\n</think>\n\n…'``).
- ``qwq_closing_only`` (QwQ / Qwen3 "Thinking" / DeepSeek-R1 distills whose chat template
  writes ``<think>`` into the prompt): the content carries the thinking and only the closing
  tag. Sources: github.com/vllm-project/vllm/issues/22507 (Qwen3-4B-Thinking-2507 "doesn't
  output <think>"), github.com/QwenLM/Qwen3-VL/issues/1504 ("only a closing tag"),
  github.com/vllm-project/vllm-ascend/issues/7061.
- ``openai_unverified`` (o3, gpt-5 for an organisation OpenAI has not verified): a streamed
  request is refused, 400 ``invalid_request_error``, ``param: stream``, ``code:
  unsupported_value``, "Your organization must be verified to stream this model. Please go
  to: https://platform.openai.com/settings/organization/general and click on Verify
  Organization. If you just verified, it can take up to 15 minutes for access to
  propagate."; the same request without ``stream`` is answered. Sources: the body quoted in
  github.com/RooCodeInc/Roo-Code/issues/6868 and github.com/continuedev/continue/issues/8209.
- ``openrouter_unverified``: the same refusal through OpenRouter, which wraps it: 400
  "Provider returned error", the provider's body as text in ``metadata.raw`` (source:
  github.com/BeehiveInnovations/pal-mcp-server/issues/134).
- ``gateway_unnamed_refusal``: a gateway in front of a server on an older API version that
  refuses ``stream_options`` but says only "Provider returned error" (``metadata.raw`` "Bad
  Request", no ``param``), as OpenRouter does when the upstream body is not JSON (same
  source).
- ``tgi`` (Hugging Face text-generation-inference): ``/v1/models`` names no window; ``GET
  /info`` has ``max_input_tokens`` and ``max_total_tokens`` (its OpenAPI schema ``Info``,
  github.com/huggingface/text-generation-inference docs/openapi.json; older servers say
  ``max_input_length``).
- ``litellm`` (LiteLLM proxy): ``/v1/models`` entries ``owned_by: "openai"`` without a
  window; ``GET /model/info`` lists ``model_name``, ``litellm_params`` and ``model_info``
  with ``max_input_tokens`` / ``max_output_tokens`` / ``max_tokens``
  (docs.litellm.ai/docs/proxy/model_management).
- ``lmstudio``: ``/v1/models`` ``owned_by: "organization_owner"``, no window; its REST API
  ``GET /api/v0/models/<id>`` has ``max_context_length`` and, for a loaded model,
  ``loaded_context_length`` (lmstudio.ai/docs/developer/rest/endpoints).
- ``ollama``'s ``/api/show`` runs the model with ``num_ctx`` 8,192, smaller than its
  131,072-token ``llama.context_length`` (docs.ollama.com/api, "Show model information").
- ``gateway_no_stream_usage``: a proxy on an older API version: ``stream_options`` refused
  ("Unrecognized request argument supplied: stream_options"), so no usage in streams.
- ``openrouter``: ``/v1/models`` entries with ``context_length`` and
  ``top_provider.max_completion_tokens``; reasoning in ``delta.reasoning``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

CONTEXT_LENGTH = 32_768  # what every profile reports for its model, where it reports one
OLLAMA_NUM_CTX = 8_192
LLAMACPP_N_CTX = 16_384


@dataclass(frozen=True)
class WireProfile:
    name: str
    owned_by: str = "system"
    model_fields: tuple[tuple[str, Any], ...] = ()
    stream_usage: str = "on_request"  # "on_request" | "never" | "refused"
    reasoning_field: str = ""  # the delta field carrying reasoning text; "" sends none
    reasoning_tokens: bool = False  # completion_tokens_details.reasoning_tokens in usage
    refuses_max_tokens: bool = False
    default_temperature_only: bool = False
    whole_tool_calls: bool = False  # one chunk per call, no ``index``
    refuses_reasoning_input: bool = False
    requires_reasoning_echo: bool = False
    inline_think: str = ""  # "tags": <think>…</think> in content; "closing_only": …</think>
    refuses_stream: str = ""  # "openai": OpenAI's own body; "openrouter": wrapped in its own
    refuses_stream_options_unnamed: bool = False

    @property
    def shows_reasoning(self) -> bool:
        return bool(self.reasoning_field or self.inline_think)

    def content(self, content: str | None, reasoning: str | None) -> str | None:
        """The reply's content as this provider writes it (inline thinking included)."""
        if not reasoning or not self.inline_think:
            return content
        opened = "<think>\n" if self.inline_think == "tags" else ""
        return f"{opened}{reasoning}</think>\n\n{content or ''}"

    def models(self, model: str) -> dict[str, Any]:
        entry = {"id": model, "object": "model", "created": int(time.time())}
        entry |= {"owned_by": self.owned_by, **dict(self.model_fields)}
        return {"object": "list", "data": [entry]}

    def refusal(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """The 400 error body this provider answers ``body`` with, if it refuses it."""
        if self.refuses_max_tokens and "max_tokens" in body:
            return _invalid(
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
                "max_tokens",
                "unsupported_parameter",
            )
        temperature = body.get("temperature")
        if self.default_temperature_only and temperature not in (None, 1, 1.0):
            return _invalid(
                f"Unsupported value: 'temperature' does not support {temperature} with this "
                "model. Only the default (1) value is supported.",
                "temperature",
                "unsupported_value",
            )
        if self.stream_usage == "refused" and "stream_options" in body:
            return _invalid("Unrecognized request argument supplied: stream_options", None, None)
        if self.refuses_stream and body.get("stream"):
            refusal = _invalid(UNVERIFIED_STREAM, "stream", "unsupported_value")
            if self.refuses_stream == "openai":
                return refusal
            return _wrapped(json.dumps({"error": refusal}, indent=2))
        if self.refuses_stream_options_unnamed and "stream_options" in body:
            return _wrapped("Bad Request")
        if self.requires_reasoning_echo and any(
            m.get("tool_calls") and not isinstance(m.get("reasoning_content"), str)
            for m in body.get("messages", [])
            if isinstance(m, dict) and m.get("role") == "assistant"
        ):
            return _invalid(
                "The `reasoning_content` in the thinking mode must be passed back to the API.",
                None,
                "invalid_request_error",
            )
        if self.refuses_reasoning_input and any(
            "reasoning_content" in m for m in body.get("messages", []) if isinstance(m, dict)
        ):
            return _invalid(
                "The reasoning_content of earlier messages must not be sent back.",
                "messages",
                "invalid_request_error",
            )
        return None

    def sends_stream_usage(self, body: dict[str, Any]) -> bool:
        if self.stream_usage != "on_request":
            return False
        return bool((body.get("stream_options") or {}).get("include_usage"))

    def usage(self, usage: dict[str, int], reasoning: str | None) -> dict[str, Any]:
        if not self.reasoning_tokens:
            return usage
        thought = len(reasoning or "") // 4 + 8  # hidden reasoning is billed as output
        return usage | {
            "completion_tokens": usage["completion_tokens"] + thought,
            "total_tokens": usage["total_tokens"] + thought,
            "completion_tokens_details": {"reasoning_tokens": thought},
        }

    def get(self, path: str, model: str = "scripted") -> dict[str, Any] | None:
        if self.name == "llamacpp" and path == "/props":
            return {"default_generation_settings": {"n_ctx": LLAMACPP_N_CTX}, "total_slots": 1}
        if self.name == "tgi" and path == "/info":
            return {
                "model_id": model,
                "max_input_tokens": TGI_MAX_INPUT,
                "max_total_tokens": TGI_MAX_TOTAL,
                "max_batch_total_tokens": 16_000,
                "max_concurrent_requests": 128,
                "router": "text-generation-router",
                "version": "3.3.6",
            }
        if self.name == "litellm" and path == "/model/info":
            entry = _litellm_entry(model, LITELLM_INPUT, LITELLM_OUTPUT)
            return {"data": [_litellm_entry("other-model", 8_192, 4_096), entry]}
        if self.name == "lmstudio" and path.startswith("/api/v0/models/"):
            return {
                "id": path.rsplit("/", 1)[-1],
                "object": "model",
                "type": "llm",
                "publisher": "lmstudio-community",
                "arch": "qwen2",
                "compatibility_type": "gguf",
                "quantization": "Q4_K_M",
                "state": "loaded",
                "max_context_length": CONTEXT_LENGTH,
                "loaded_context_length": LMSTUDIO_LOADED,
            }
        return None

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        if self.name == "ollama" and path == "/api/show":
            return {
                "parameters": f'num_ctx                        {OLLAMA_NUM_CTX}\nstop "<|eot_id|>"',
                "details": {"family": "llama", "parameter_size": "3.2B"},
                "model_info": {
                    "general.architecture": "llama",
                    "llama.context_length": CONTEXT_LENGTH * 4,
                },
            }
        return None


TGI_MAX_INPUT, TGI_MAX_TOTAL = 7_168, 8_192
LMSTUDIO_LOADED = 8_192
LITELLM_INPUT, LITELLM_OUTPUT = 128_000, 16_384


def _litellm_entry(name: str, max_input: int, max_output: int) -> dict[str, Any]:
    return {
        "model_name": name,
        "litellm_params": {"model": f"openai/{name}"},
        "model_info": {
            "id": f"id-{name}",
            "max_tokens": max_output,
            "max_input_tokens": max_input,
            "max_output_tokens": max_output,
            "litellm_provider": "openai",
            "mode": "chat",
        },
    }


UNVERIFIED_STREAM = (
    "Your organization must be verified to stream this model. Please go to: "
    "https://platform.openai.com/settings/organization/general and click on Verify "
    "Organization. If you just verified, it can take up to 15 minutes for access to propagate."
)


def _wrapped(raw: str) -> dict[str, Any]:
    """OpenRouter's error for what the upstream provider refused."""
    return {
        "message": "Provider returned error",
        "code": 400,
        "metadata": {"raw": raw, "provider_name": "OpenAI"},
    }


def _invalid(message: str, param: str | None, code: str | None) -> dict[str, Any]:
    return {"message": message, "type": "invalid_request_error", "param": param, "code": code}


PROFILES: dict[str, WireProfile] = {
    p.name: p
    for p in (
        WireProfile("openai", owned_by="openai"),
        WireProfile(
            "openai_reasoning",
            owned_by="openai",
            reasoning_tokens=True,
            refuses_max_tokens=True,
            default_temperature_only=True,
        ),
        WireProfile(
            "vllm",
            owned_by="vllm",
            model_fields=(("max_model_len", CONTEXT_LENGTH), ("root", "scripted")),
            reasoning_field="reasoning_content",
        ),
        WireProfile(
            "llamacpp",
            owned_by="llamacpp",
            model_fields=(("meta", {"n_ctx_train": CONTEXT_LENGTH, "n_vocab": 128_256}),),
            reasoning_field="reasoning_content",
        ),
        WireProfile(
            "ollama",
            owned_by="library",
            stream_usage="never",
            reasoning_field="reasoning",
            whole_tool_calls=True,
        ),
        WireProfile(
            "deepseek",
            owned_by="deepseek",
            reasoning_field="reasoning_content",
            reasoning_tokens=True,
            requires_reasoning_echo=True,
        ),
        WireProfile(
            "deepseek_legacy",
            owned_by="deepseek",
            reasoning_field="reasoning_content",
            reasoning_tokens=True,
            refuses_reasoning_input=True,
        ),
        WireProfile("gateway_no_stream_usage", stream_usage="refused"),
        WireProfile("openai_unverified", owned_by="openai", refuses_stream="openai"),
        WireProfile("tgi", owned_by="huggingface"),
        WireProfile("litellm", owned_by="openai"),
        WireProfile("lmstudio", owned_by="organization_owner"),
        WireProfile("openrouter_unverified", owned_by="", refuses_stream="openrouter"),
        WireProfile("gateway_unnamed_refusal", owned_by="", refuses_stream_options_unnamed=True),
        WireProfile("vllm_think_inline", owned_by="vllm", inline_think="tags"),
        WireProfile("qwq_closing_only", owned_by="vllm", inline_think="closing_only"),
        WireProfile(
            "openrouter",
            owned_by="",
            model_fields=(
                ("context_length", CONTEXT_LENGTH),
                (
                    "top_provider",
                    {"context_length": CONTEXT_LENGTH, "max_completion_tokens": 8_192},
                ),
            ),
            reasoning_field="reasoning",
        ),
    )
}
