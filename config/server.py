"""daphne with Twisted's form parsing turned off, whichever command starts it.

Twisted's ``Request.requestReceived`` parses a ``multipart/form-data`` or
``application/x-www-form-urlencoded`` POST body into ``request.args`` on the event loop,
before daphne hands the request to Django, for every URL and without a login: a body of
175,000 tiny parts froze a process for seconds, and a broken multipart body got Twisted's
empty 400 instead of fimone's JSON error. daphne never reads ``request.args``, so here the
parsing is off and Django alone parses bodies, in a worker thread, with its limits
(``DATA_UPLOAD_MAX_MEMORY_SIZE``, ``DATA_UPLOAD_MAX_NUMBER_FIELDS``) and its error handlers.

The switch is ``serve_without_form_parsing``, called when ``config.asgi`` is imported
under daphne: daphne's command line imports the application before it builds its HTTP
factory, so the usual Channels command is as safe as fimone's own::

    daphne -b 127.0.0.1 -p 8001 config.asgi:application
    python -m config.server -b 127.0.0.1 -p 8001 config.asgi:application   # bin/run

(the second is daphne's command line with the switch made before anything is imported;
``bin/run``, the live-server test fixture and docs/operations.md's systemd unit use it).
"""

from __future__ import annotations

import sys

import daphne.server
from daphne.cli import CommandLineInterface
from daphne.http_protocol import HTTPFactory, WebRequest


class FormlessRequest(WebRequest):
    """daphne's request, without Twisted's parsing of form bodies into ``args`` (through
    the public ``parsePOSTFormSubmission`` argument of Twisted's ``Request``)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs["parsePOSTFormSubmission"] = False
        super().__init__(*args, **kwargs)


class FormlessHTTPFactory(HTTPFactory):
    def buildProtocol(self, addr):  # noqa: N802 - Twisted's name
        protocol = super().buildProtocol(addr)
        protocol.requestFactory = FormlessRequest
        return protocol


def serve_without_form_parsing() -> None:
    """Make the daphne server of this process build formless requests (before its
    ``Server.run``). daphne 4 has no hook or option for its request class: ``Server.run``
    builds its HTTP factory by the module-level name ``daphne.server.HTTPFactory``, so that
    name is pointed at ours (this process serves only fimone). tests/security/
    test_bodies_live.py checks both commands, so a daphne that stops reading the name
    fails there."""
    daphne.server.HTTPFactory = FormlessHTTPFactory


def main(argv: list[str] | None = None) -> None:
    serve_without_form_parsing()
    CommandLineInterface().run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
