"""The HTTP client of every model client, with one TLS context for the whole process.

Building a TLS context reads the CA bundle, about 17 ms of CPU. The SDK builds one for each
new client, and a client is made on the event loop the first time a model object talks on
it (``OpenAIChatLLM._client``): every new model object stalled the loop, and so every socket
of the process, for that long. The context is the same for all of them, so it is built once,
by ``tls_context()``; a model object asks for it when it is made, which the registry does in
a worker thread, so the loop normally finds it ready. It is httpx's own default context
(``httpx2.create_ssl_context``): ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` apply as before.
"""

from __future__ import annotations

import asyncio
import ssl
import threading

import httpx2
import openai

_context: ssl.SSLContext | None = None
_lock = threading.Lock()


def tls_context() -> ssl.SSLContext:
    global _context
    if _context is None:
        with _lock:
            if _context is None:
                _context = httpx2.create_ssl_context()
    return _context


class ModelHttpClient(openai.DefaultAsyncHttpxClient):
    """The SDK's default HTTP client (its timeouts, limits and redirects) on the shared TLS
    context. Like the one the SDK makes itself, it closes its connections when it is dropped
    while a loop runs: a model object that leaves the registry's cache takes none along."""

    def __init__(self) -> None:
        super().__init__(verify=tls_context())

    def __del__(self) -> None:
        if self.is_closed:
            return
        try:
            asyncio.get_running_loop().create_task(self.aclose())
        except RuntimeError:  # no loop running: the sockets close with their objects
            pass
