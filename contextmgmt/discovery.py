"""Reading a model's context window (and output limit) from the endpoint that serves it.

Nothing in the chat-completions API says how long a model's context is; several servers say
it elsewhere. What is read from where (docs/models.md has the same table):

- ``GET /v1/models``: vLLM ``max_model_len``; OpenRouter, Together and others
  ``context_length`` (OpenRouter's ``top_provider.max_completion_tokens`` for the output);
  Groq ``context_window`` and ``max_completion_tokens``; LM Studio ``max_context_length``;
- llama.cpp: ``GET /props`` ``default_generation_settings.n_ctx`` (the window the server was
  started with), else ``/v1/models`` ``meta.n_ctx_train``;
- Ollama: ``POST /api/show`` — ``model_info["<arch>.context_length"]`` (the model's window)
  and the Modelfile's ``num_ctx`` (the window the server runs it with): the smaller, with a
  warning when ``num_ctx`` is the smaller (Ollama cuts longer prompts silently);
- servers whose ``/v1/models`` says nothing, by their own APIs (``_native``), in this order:
  Hugging Face TGI ``GET /info`` (``max_total_tokens``; ``max_input_tokens`` or the older
  ``max_input_length`` leaves the rest for the output), LiteLLM ``GET /model/info``
  (``model_info.max_input_tokens`` / ``max_tokens`` and ``max_output_tokens`` of the entry
  whose ``model_name`` is the model), LM Studio ``GET /api/v0/models/<model>``
  (``loaded_context_length`` when loaded, else ``max_context_length``).

Plain HTTP, called from the admin, never from a run; bounded (docs/operations.md, "Reading
a model's context size"): one deadline for all the requests of one reading, at most
``MAX_BODY_BYTES`` read of an answer, figures outside 1..``MAX_CONTEXT_SIZE`` ignored, and
the key never follows a redirect to another host.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.client import HTTPMessage
from typing import IO, Any
from urllib.parse import quote, urlsplit, urlunsplit

from contextmgmt.core.budget import MAX_CONTEXT_SIZE
from contextmgmt.core.providers import ProviderProfile, detect, detect_from_models

log = logging.getLogger(__name__)

TIMEOUT_SECONDS = 5.0  # for all the requests of one reading together
# A models list of thousands of entries (OpenRouter) is a few MB; more is not an answer.
MAX_BODY_BYTES = 4 * 1024 * 1024
_MODELS_CONTEXT_KEYS = ("max_model_len", "context_length", "context_window", "max_context_length")
_MODELS_OUTPUT_KEYS = ("max_completion_tokens", "max_output_tokens")


@dataclass(frozen=True)
class Discovery:
    """What the endpoint said; ``context_size`` None when it said nothing usable."""

    context_size: int | None
    max_output_tokens: int | None
    source: str  # e.g. "GET /v1/models max_model_len"; or why nothing was found
    profile: ProviderProfile
    note: str = ""


def discover(
    base_url: str, model: str, api_key: str = "", *, timeout: float = TIMEOUT_SECONDS
) -> Discovery:
    """Ask the endpoint at ``base_url`` about ``model``; never raises for the endpoint's fault."""
    profile = detect(base_url, model)
    if urlsplit(base_url).scheme not in ("http", "https"):
        return Discovery(
            None, None, "could not read the context size (no http(s) base URL)", profile
        )
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    models_url = base_url.rstrip("/") + "/models"
    tried: list[str] = []
    deadline = _Deadline(time.monotonic() + timeout)
    payload = _get_json(models_url, headers, deadline, tried)
    profile = detect_from_models(payload, profile)
    entry = _entry(payload, model)

    if profile.name == "ollama":
        found = _ollama(_root(base_url), model, deadline, tried)
        if found:
            note = found.note or OLLAMA_NOTE
            return Discovery(found.context, found.output, found.source, profile, note)
    if profile.name == "llamacpp":
        props = _get_json(_root(base_url) + "/props", headers, deadline, tried)
        n_ctx = _positive(_dig(props, "default_generation_settings", "n_ctx"))
        if n_ctx:
            return Discovery(n_ctx, None, "GET /props default_generation_settings.n_ctx", profile)
    if entry is not None:
        for key in _MODELS_CONTEXT_KEYS:
            size = _positive(entry.get(key))
            if size:
                output = _output_limit(entry)
                return Discovery(size, output, f"GET /v1/models {key}", profile)
        n_ctx_train = _positive(_dig(entry, "meta", "n_ctx_train"))
        if n_ctx_train:
            return Discovery(n_ctx_train, None, "GET /v1/models meta.n_ctx_train", profile)
    native = _native(_root(base_url), model, headers, deadline, tried)
    if native is not None:
        return Discovery(native.context, native.output, native.source, profile, native.note)
    why = "; ".join(tried) if tried else "the endpoint reports no context length"
    if entry is None and payload is not None:
        why = f"model {model!r} is not in GET /v1/models" if model else why
    return Discovery(None, None, f"could not read the context size ({why})", profile)


OLLAMA_NOTE = (
    "Ollama serves a model with its own context window (OLLAMA_CONTEXT_LENGTH, or num_ctx in "
    "the Modelfile); if that is smaller, set the smaller figure here."
)


def _ollama(root: str, model: str, deadline: _Deadline, tried: list[str]) -> _Found | None:
    shown = _post_json(root + "/api/show", {"model": model}, deadline, tried)
    if not isinstance(shown, dict):
        return None
    match = re.search(r"^\s*num_ctx\s+(\d{1,12})\s*$", str(shown.get("parameters") or ""), re.M)
    num_ctx = _positive(int(match.group(1))) if match else None
    trained = _ollama_trained(shown)
    if num_ctx and trained and num_ctx < trained[0]:
        return _Found(
            num_ctx, None, "POST /api/show parameters num_ctx", ollama_smaller(num_ctx, trained[0])
        )
    if num_ctx:
        return _Found(num_ctx, None, "POST /api/show parameters num_ctx")
    if trained:
        return _Found(trained[0], None, f"POST /api/show model_info {trained[1]}")
    return None


def _ollama_trained(shown: dict[str, Any]) -> tuple[int, str] | None:
    """The model's own window: ``model_info["<arch>.context_length"]``, and its key."""
    info = shown.get("model_info") or {}
    for key, value in info.items() if isinstance(info, dict) else ():
        if key.endswith(".context_length") and _positive(value):
            return int(value), key
    return None


def ollama_smaller(num_ctx: int, trained: int) -> str:
    return (
        f"Warning: Ollama runs this model with num_ctx {num_ctx:,}, smaller than the model's "
        f"{trained:,}-token window; the smaller figure is used (Ollama cuts longer prompts "
        "without saying so). Raise num_ctx in the Modelfile, or OLLAMA_CONTEXT_LENGTH, to use "
        "more, then read the context size again."
    )


@dataclass(frozen=True)
class _Found:
    context: int
    output: int | None
    source: str
    note: str = ""


def _native(
    root: str, model: str, headers: dict[str, str], deadline: _Deadline, tried: list[str]
) -> _Found | None:
    """The window from a server's own API, when ``/v1/models`` said nothing of it: TGI,
    LiteLLM, LM Studio, in this order (each a request only while the deadline lasts)."""
    for probe in (_tgi, _litellm, _lmstudio):
        found = probe(root, model, headers, deadline, tried)
        if found is not None:
            return found
    return None


def _tgi(
    root: str, model: str, headers: dict[str, str], deadline: _Deadline, tried: list[str]
) -> _Found | None:
    """Hugging Face TGI: ``GET /info``."""
    info = _get_json(root + "/info", headers, deadline, tried)
    total = _positive(_dig(info, "max_total_tokens"))
    if not total:
        return None
    prompt = _positive(_dig(info, "max_input_tokens")) or _positive(_dig(info, "max_input_length"))
    output = total - prompt if prompt and prompt < total else None
    return _Found(total, output, "GET /info max_total_tokens")


def _litellm(
    root: str, model: str, headers: dict[str, str], deadline: _Deadline, tried: list[str]
) -> _Found | None:
    """LiteLLM proxy: ``GET /model/info``, the entry whose ``model_name`` is the model."""
    payload = _get_json(root + "/model/info", headers, deadline, tried)
    entries = payload.get("data") if isinstance(payload, dict) else None
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, dict) or entry.get("model_name") != model:
            continue
        info = entry.get("model_info")
        if not isinstance(info, dict):
            info = {}
        size = _positive(info.get("max_input_tokens")) or _positive(info.get("max_tokens"))
        if size:
            output = _positive(info.get("max_output_tokens"))
            key = "max_input_tokens" if _positive(info.get("max_input_tokens")) else "max_tokens"
            return _Found(size, output, f"GET /model/info model_info.{key}")
    return None


def _lmstudio(
    root: str, model: str, headers: dict[str, str], deadline: _Deadline, tried: list[str]
) -> _Found | None:
    """LM Studio's REST API: ``GET /api/v0/models/<model>``; the window it loaded the model
    with, else the model's own."""
    if not model:
        return None
    entry = _get_json(f"{root}/api/v0/models/{quote(model, safe='')}", headers, deadline, tried)
    loaded = _positive(_dig(entry, "loaded_context_length"))
    size = _positive(_dig(entry, "max_context_length"))
    if loaded:
        note = LMSTUDIO_LOADED if size and loaded < size else ""
        return _Found(loaded, None, "GET /api/v0/models loaded_context_length", note)
    if size:
        return _Found(size, None, "GET /api/v0/models max_context_length", LMSTUDIO_NOTE)
    return None


LMSTUDIO_LOADED = (
    "LM Studio loaded this model with a shorter context than it supports; reload it with a "
    "longer one (lms load --context-length) to use more."
)
LMSTUDIO_NOTE = (
    "LM Studio loads a model with the context length set when it is loaded (often 4,096); "
    "if that is smaller, set the smaller figure here."
)


def _output_limit(entry: dict[str, Any]) -> int | None:
    for key in _MODELS_OUTPUT_KEYS:
        value = _positive(entry.get(key)) or _positive(_dig(entry, "top_provider", key))
        if value:
            return value
    return None


def _entry(payload: Any, model: str) -> dict[str, Any] | None:
    entries = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(entries, list):
        return None
    entries = [e for e in entries if isinstance(e, dict)]
    for entry in entries:
        if entry.get("id") == model:
            return entry
    # A server that serves one model (llama.cpp, a vLLM instance) answers to any name.
    return entries[0] if len(entries) == 1 else None


def _root(base_url: str) -> str:
    """``http://host:11434/v1`` → ``http://host:11434`` (native APIs live at the root)."""
    parts = urlsplit(base_url.rstrip("/"))
    path = re.sub(r"/v1$", "", parts.path)
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _positive(value: Any) -> int | None:
    """A token count the endpoint reports, if it is one (1..MAX_CONTEXT_SIZE); else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if not 1 <= value <= MAX_CONTEXT_SIZE:
        return None
    return int(value)


@dataclass(frozen=True)
class _Deadline:
    """When a reading must be over; each request gets what is left of it."""

    at: float

    def left(self) -> float:
        return self.at - time.monotonic()


class _SameHostRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect, but sends the key only to the host it was meant for: urllib
    itself copies every header to wherever the endpoint redirects."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(newurl) != _origin(req.full_url):
            for name in ("Authorization", "Cookie", "Proxy-Authorization"):
                new.remove_header(name)
                new.unredirected_hdrs.pop(name, None)
        return new


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    default = {"http": 80, "https": 443}.get(parts.scheme.lower())
    return parts.scheme.lower(), parts.hostname, port or default


_opener = urllib.request.build_opener(_SameHostRedirects)


def _get_json(url: str, headers: dict[str, str], deadline: _Deadline, tried: list[str]) -> Any:
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 - http(s) checked
    return _fetch(request, deadline, tried)


def _post_json(url: str, body: dict[str, Any], deadline: _Deadline, tried: list[str]) -> Any:
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")  # noqa: S310
    return _fetch(request, deadline, tried)


def _fetch(request: urllib.request.Request, deadline: _Deadline, tried: list[str]) -> Any:
    what = f"{request.get_method()} {urlsplit(request.full_url).path}"
    try:
        if deadline.left() <= 0:
            raise TimeoutError("no time left")
        with _opener.open(request, timeout=deadline.left()) as response:
            return json.loads(_read_bounded(response, deadline))
    except _TooLarge:
        tried.append(f"{what}: answer larger than {MAX_BODY_BYTES:,} bytes")
    except urllib.error.HTTPError as err:
        tried.append(f"{what}: HTTP {err.code}")
    except (urllib.error.URLError, TimeoutError, OSError) as err:
        tried.append(f"{what}: {getattr(err, 'reason', err)}")
    except (ValueError, RecursionError):
        tried.append(f"{what}: not JSON")
    log.info("context discovery: %s", tried[-1])
    return None


class _TooLarge(Exception):
    pass


def _read_bounded(response: Any, deadline: _Deadline) -> bytes:
    """The body, at most MAX_BODY_BYTES, read before the deadline: the socket timeout alone
    restarts with every byte, so an endpoint that drips would hold the admin's request."""
    chunks: list[bytes] = []
    size = 0
    while True:
        if deadline.left() <= 0:
            raise TimeoutError("the answer took too long")
        chunk = response.read1(64 * 1024) if hasattr(response, "read1") else response.read(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _TooLarge
        chunks.append(chunk)
