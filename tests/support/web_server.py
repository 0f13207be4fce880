"""A small HTTP server on a loopback port for the ``fetch_url`` tests.

Runs in a thread of the test process (a daphne subprocess can fetch from it too). What it
serves is made when asked: the 50 MB body is generated as it is sent, never stored, and
stops when the client hangs up.

    with serve_pages() as site:
        site.url("/article")  # "http://127.0.0.1:PORT/article"
"""

from __future__ import annotations

import contextlib
import gzip
import json
import ssl
import threading
import time
import urllib.parse
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.support.documents import make_pdf

# Words that only the page's boilerplate carries: none may reach the extracted text.
BOILERPLATE_MARKERS = ("NAV_MARKER", "FOOTER_MARKER", "ADS_MARKER", "SCRIPT_MARKER", "STYLE_MARKER")
ARTICLE_FACT = "heliotrope-42"
PDF_FACT = "The harbour pilot's call sign is KESTREL-9."

ARTICLE = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>The Tern Report</title>
<script>var tracking = "SCRIPT_MARKER"; document.title = "x";</script>
<style>.STYLE_MARKER {{ color: red }}</style></head>
<body>
<nav><a href="/">Home</a> | <a href="/about">About</a> | <a href="/shop">NAV_MARKER shop</a></nav>
<article>
<h1>Arctic terns fly farther than any other bird</h1>
<p>The arctic tern migrates from the Arctic to the Antarctic every year, a round trip of
about 70,900 kilometres. Researchers tracked eleven birds with geolocators weighing 1.4
grams each, and the longest journey they recorded was 81,600 kilometres.</p>
<h2>Why they fly so far</h2>
<p>Following the summer at both poles, terns see more daylight than any other animal on
Earth. The lighthouse keeper's code word is <b>{ARTICLE_FACT}</b>, written on the last
page of the logbook.</p>
<ul><li>Weight: about 100 grams</li><li>Lifespan: up to 30 years</li></ul>
</article>
<aside>Related offers: ADS_MARKER buy a bird feeder now, limited time only!</aside>
<footer>&copy; 2026 Example Corp FOOTER_MARKER. All rights reserved. Cookie policy.</footer>
<script>document.write("SCRIPT_MARKER again")</script>
</body></html>
"""


def long_fact(n: int) -> str:
    """The one fact of long page ``n``."""
    return f"The locker code of pier {n} is QX-{n:02d}-{7311 + n * 37}."


_FILLER = (
    "The tide table for the northern pier lists the usual times for the week.",
    "Gulls gathered on the breakwater while the ferry unloaded its morning cargo.",
    "A crew repainted the railings along the promenade before the summer season.",
    "Fishing boats returned at dusk with crates of mackerel and a few crabs.",
)


def long_page(n: int, chars: int, at: float) -> str:
    """About ``chars`` characters of plain prose whose one fact (``long_fact(n)``) starts at
    the share ``at`` of the text, on a line of its own."""
    lines: list[str] = []
    size = 0
    fact_at = int(chars * at)
    i = 0
    while size < chars:
        if size >= fact_at and fact_at >= 0:
            lines.append(long_fact(n))
            fact_at = -1
        else:
            lines.append(f"{i}. {_FILLER[i % len(_FILLER)]}")
            i += 1
        size += len(lines[-1]) + 1
    return "\n".join(lines)


DATA = {"station": "Tern Island", "readings": [{"hour": 6, "celsius": 4.5}], "ok": True}


@dataclass
class PageServer:
    """The running server: its base URL and what it saw."""

    base: str
    port: int
    requests: list[str] = field(default_factory=list)
    sni: list[str | None] = field(default_factory=list)
    bomb_sizes: list[int] = field(default_factory=list)
    big_bytes_sent: list[int] = field(default_factory=list)
    big_downloads_begun: int = 0  # /big responses whose first piece went out

    def url(self, path: str) -> str:
        return self.base + path


def _handler(site: PageServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet test output
            pass

        def send_body(self, body: bytes, content_type: str, status: int = 200, **headers) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            self.end_headers()
            self.wfile.write(body)

        def redirect(self, location: str, status: int = 302) -> None:
            self.send_body(b"", "text/plain", status, Location=location)

        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            parsed = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(parsed.query))
            site.requests.append(f"{self.headers.get('Host')} {self.path}")
            path = parsed.path
            if path == "/article":
                self.send_body(ARTICLE.encode(), "text/html; charset=utf-8")
            elif path == "/article.gz":
                self.send_body(
                    gzip.compress(ARTICLE.encode()),
                    "text/html; charset=utf-8",
                    Content_Encoding="gzip",
                )
            elif path == "/data.json":
                self.send_body(json.dumps(DATA, separators=(",", ":")).encode(), "application/json")
            elif path == "/long.txt":  # long_page(?n=, ?chars=, ?at=)
                text = long_page(
                    int(query.get("n", "0")),
                    int(query.get("chars", "50000")),
                    float(query.get("at", "0.6")),
                )
                self.send_body(text.encode(), "text/plain; charset=utf-8")
            elif path == "/notes.txt":
                self.send_body(b"line one\n  line two, indented\n", "text/plain")
            elif path == "/report.pdf":
                pages = ["A report on harbour safety.", PDF_FACT, "The end of the report."]
                self.send_body(make_pdf(pages, title="Harbour report"), "application/pdf")
            elif path == "/picture.png":
                self.send_body(b"\x89PNG\r\n\x1a\n" + bytes(200), "image/png")
            elif path == "/missing":
                self.send_body(
                    b"<html><body><p>No such page here.</p></body></html>", "text/html", 404
                )
            elif path.startswith("/hop/"):  # /hop/3 → /hop/2 → /hop/1 → /hop/0 → article
                left = int(path.rsplit("/", 1)[1])
                status = (301, 302, 303, 307, 308)[left % 5]
                self.redirect(f"/hop/{left - 1}" if left > 0 else "/article", status)
            elif path == "/go":  # a redirect to wherever ?to= says
                self.redirect(query["to"])
            elif path == "/loop":
                self.redirect("/loop")
            elif path == "/many":  # an article of ?n= paragraphs
                paragraphs = "".join(
                    f"<p>Paragraph {i} of a long page about terns and the sea.</p>"
                    for i in range(int(query.get("n", "1000")))
                )
                page = ARTICLE.replace("</article>", paragraphs + "</article>")
                self.send_body(page.encode(), "text/html; charset=utf-8")
            elif path == "/bomb":  # ?mb= megabytes of text in a gzip body of a few hundred kB
                self.send_bomb(int(query.get("mb", "100")))
            elif path == "/big":
                self.send_big(int(query.get("mb", "50")))
            elif path == "/slow":
                time.sleep(float(query.get("s", "3")))
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_body(b"late", "text/plain")
            elif path == "/trickle":
                self.send_trickle(float(query.get("s", "0.2")), int(query.get("n", "100")))
            elif path == "/one-byte-chunks":
                self.send_one_byte_chunks(float(query.get("s", "30")))
            else:
                self.send_body(b"not found", "text/plain", 404)

        def send_big(self, megabytes: int) -> None:
            total = megabytes * 1024 * 1024
            chunk = (b"<p>" + b"all work and no play " * 3000 + b"</p>\n")[:65536]
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(total))
            self.end_headers()
            sent = 0
            try:
                while sent < total:
                    piece = chunk[: total - sent]
                    self.wfile.write(piece)
                    if not sent:
                        site.big_downloads_begun += 1
                    sent += len(piece)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading: what the cap is for
            finally:
                site.big_bytes_sent.append(sent)
                self.close_connection = True

        def send_bomb(self, megabytes: int) -> None:
            packer = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
            block = b"<p>" + b"A" * 65_000 + b"</p>\n"
            parts = [packer.compress(block) for _ in range(megabytes * 16)]
            body = b"".join(parts) + packer.flush()
            site.bomb_sizes.append(len(body))
            self.send_body(body, "text/html", Content_Encoding="gzip")

        def send_trickle(self, pause: float, count: int) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.close_connection = True
            try:
                for i in range(count):
                    self.wfile.write(f"piece {i}\n".encode())
                    self.wfile.flush()
                    time.sleep(pause)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def send_one_byte_chunks(self, seconds: float) -> None:
            """A page in chunks of one byte each, as fast as the client takes them, for
            ``seconds`` or until the client hangs up: the client's HTTP parser works on
            every byte."""
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.close_connection = True
            batch = b"1\r\nx\r\n" * 10_000
            stop = time.monotonic() + seconds
            try:
                while time.monotonic() < stop:
                    self.wfile.write(batch)
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass

    return Handler


@dataclass(frozen=True)
class TestCertificates:
    """A certificate authority made for one test run and a server certificate it signed
    for ``names``: the server's context, and a client context that trusts only the CA."""

    server: ssl.SSLContext
    client: ssl.SSLContext


def make_certificates(names: list[str]) -> TestCertificates:
    import datetime
    import tempfile

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("fimone test CA"))
        .issuer_name(name("fimone test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(name(names[0]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), False)
        .sign(ca_key, hashes.SHA256())
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory() as folder:
        chain, secret = f"{folder}/cert.pem", f"{folder}/key.pem"
        with open(chain, "wb") as out:
            out.write(leaf.public_bytes(serialization.Encoding.PEM))
        with open(secret, "wb") as out:
            out.write(
                key.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption(),
                )
            )
        server.load_cert_chain(chain, secret)
    client = ssl.create_default_context(cadata=ca.public_bytes(serialization.Encoding.PEM).decode())
    return TestCertificates(server, client)


@contextlib.contextmanager
def serve_pages(tls: ssl.SSLContext | None = None) -> Iterator[PageServer]:
    """The page server on a free loopback port, for the ``with`` block; over TLS with the
    ``tls`` server context (the names clients asked for by SNI go to ``site.sni``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(PageServer("", 0)))
    port = server.server_address[1]
    scheme = "https" if tls else "http"
    site = PageServer(f"{scheme}://127.0.0.1:{port}", port)
    if tls is not None:
        tls.sni_callback = lambda sock, name, context: site.sni.append(name)
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    server.RequestHandlerClass = _handler(site)
    server.daemon_threads = True
    thread = threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": 0.05},  # shutdown() waits up to one interval
        name="page-server",
        daemon=True,
    )
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


if __name__ == "__main__":  # a server of its own (bench/fetch.py): prints its port
    import sys

    with serve_pages() as running:
        print(running.port, flush=True)
        sys.stdin.read()  # until the parent closes our stdin
