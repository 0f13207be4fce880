"""The server fimone runs: daphne, with Twisted's form parsing turned off.

Twisted's ``Request.requestReceived`` parses a ``multipart/form-data`` or
``application/x-www-form-urlencoded`` POST body into ``request.args`` on the event loop,
before daphne hands the request to Django, for every URL and without a login: a body of
175,000 tiny parts froze a process for seconds, and a broken multipart body got Twisted's
empty 400 instead of fimone's JSON error. daphne never reads ``request.args``, so here the
parsing is off and Django alone parses bodies, in a worker thread, with its limits
(``DATA_UPLOAD_MAX_MEMORY_SIZE``, ``DATA_UPLOAD_MAX_NUMBER_FIELDS``) and its error handlers.

Run it exactly like daphne (the same options)::

    python -m fimone.server -b 127.0.0.1 -p 8001 fimone.asgi:application

``bin/run``, the live-server test fixture and docs/operations.md's systemd unit use it.
"""

from __future__ import annotations

import sys

import daphne.server
from daphne.cli import CommandLineInterface
from daphne.http_protocol import HTTPFactory, WebRequest
from daphne.server import Server


class FormlessRequest(WebRequest):
    """daphne's request, without Twisted's parsing of form bodies into ``args``."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs["parsePOSTFormSubmission"] = False
        super().__init__(*args, **kwargs)


class FormlessHTTPFactory(HTTPFactory):
    def buildProtocol(self, addr):  # noqa: N802 - Twisted's name
        protocol = super().buildProtocol(addr)
        protocol.requestFactory = FormlessRequest
        return protocol


class FimoneServer(Server):
    def run(self) -> None:
        # Server.run builds its HTTP factory by this module-level name and then serves until
        # the reactor stops, so the name is pointed at ours first (this process serves only
        # fimone).
        daphne.server.HTTPFactory = FormlessHTTPFactory
        super().run()


class FimoneCommandLine(CommandLineInterface):
    server_class = FimoneServer


def main(argv: list[str] | None = None) -> None:
    FimoneCommandLine().run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
