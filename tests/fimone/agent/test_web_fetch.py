"""``fetch_url`` against a real HTTP server on a loopback port.

The server is on 127.0.0.1, which the tool refuses by default: the tests that should get a
page allow it through the allow-list (as an operator would with
FIMONE_FETCH_ALLOWED_HOSTS), and the refusal tests show what happens without it. Host names
are resolved by an injected resolver, so that a name can lead anywhere without a DNS server.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import tracemalloc

import pytest

from fimone.agent.tools import ToolRegistry
from fimone.agent.tools.netpolicy import AddressPolicy
from fimone.agent.tools.web import FetchConfig, fetch_url_tool
from fimone.agent.tools.web_fetch import FetchLimits
from tests.support.web_server import (
    ARTICLE_FACT,
    BOILERPLATE_MARKERS,
    DATA,
    PDF_FACT,
    make_certificates,
    serve_pages,
)


@pytest.fixture(scope="module")
def site():
    with serve_pages() as server:
        yield server


def names(mapping: dict[str, list[str]]):
    """A resolver that knows only ``mapping`` (and counts its lookups)."""

    async def resolve(host: str, port: int) -> list[str]:
        resolve.calls.append(host)
        if host not in mapping:
            raise OSError(f"unknown host {host}")
        return mapping[host]

    resolve.calls = []
    return resolve


def fetcher(*allowed: str, resolver=None, max_chars: int = 20_000, **limits) -> ToolRegistry:
    config = FetchConfig(
        policy=AddressPolicy.from_entries(allowed),
        limits=FetchLimits(**{"total_seconds": 10.0, **limits}),
        max_chars=max_chars,
        resolver=resolver or names({}),
    )
    return ToolRegistry([fetch_url_tool(config)])


async def fetch(tools: ToolRegistry, url: str, **arguments) -> str:
    return await tools.run("fetch_url", json.dumps({"url": url, **arguments}))


async def test_an_article_comes_as_its_main_text_in_markdown(site):
    result = await fetch(fetcher("127.0.0.1"), site.url("/article"))
    assert result.startswith(f"URL: {site.url('/article')}\nTitle: The Tern Report\n\n")
    assert "# Arctic terns fly farther than any other bird" in result
    assert f"**{ARTICLE_FACT}**" in result
    assert "- Weight: about 100 grams" in result
    for marker in BOILERPLATE_MARKERS:
        assert marker not in result, marker
    assert "document.write" not in result and "<" not in result


async def test_a_gzipped_page_is_read(site):
    result = await fetch(fetcher("127.0.0.1"), site.url("/article.gz"))
    assert ARTICLE_FACT in result and "FOOTER_MARKER" not in result


async def test_json_comes_pretty_printed(site):
    result = await fetch(fetcher("127.0.0.1"), site.url("/data.json"))
    body = result.split("\n\n", 1)[1]
    assert body == json.dumps(DATA, indent=2)


async def test_plain_text_comes_as_it_is(site):
    result = await fetch(fetcher("127.0.0.1"), site.url("/notes.txt"))
    assert result.endswith("\n\nline one\n  line two, indented\n")


async def test_a_pdf_is_read_page_by_page(site):
    result = await fetch(fetcher("127.0.0.1"), site.url("/report.pdf"))
    assert "Title: Harbour report" in result
    assert "[page 2]\n" + PDF_FACT in result
    assert "[A PDF of 3 pages.]" in result


async def test_a_binary_file_is_refused_with_what_it_is(site):
    result = await fetch(fetcher("127.0.0.1"), site.url("/picture.png"))
    assert result.startswith("Error: ") and "image/png" in result and "208 bytes" in result


async def test_an_error_status_is_said_with_the_page(site):
    result = await fetch(fetcher("127.0.0.1"), site.url("/missing"))
    assert result.startswith("Error: the server answered HTTP 404.\nURL: ")
    assert "No such page here." in result


async def test_a_redirect_chain_is_followed_to_its_end(site):
    result = await fetch(fetcher("127.0.0.1"), site.url("/hop/4"))
    assert result.startswith(f"URL: {site.url('/article')}\nRedirected from: {site.url('/hop/4')}")
    assert ARTICLE_FACT in result


async def test_too_many_redirects_are_refused(site):
    result = await fetch(fetcher("127.0.0.1", max_redirects=3), site.url("/hop/4"))
    assert result.startswith("Error: too many redirects (more than 3)")
    looping = await fetch(fetcher("127.0.0.1"), site.url("/loop"))
    assert looping.startswith("Error: too many redirects (more than 5)")


async def test_loopback_is_refused_without_the_allow_list(site):
    before = len(site.requests)
    result = await fetch(fetcher(), site.url("/article"))
    assert result == (
        "Error: refused to connect to 127.0.0.1: that is a loopback address, and fetch_url "
        "only reads public web pages. An operator can allow this host or network in "
        "FIMONE_FETCH_ALLOWED_HOSTS."
    )
    assert len(site.requests) == before  # nothing was sent


async def test_a_redirect_to_loopback_is_refused_unless_allowed(site):
    """The first hop's name is allowed; where it redirects to is checked on its own."""
    resolver = names({"pages.test": ["127.0.0.1"]})
    start = f"http://pages.test:{site.port}/go?to={site.url('/article')}"
    before = len(site.requests)

    refused = await fetch(fetcher("pages.test", resolver=resolver), start)
    assert refused.startswith("Error: refused to connect to 127.0.0.1: that is a loopback")
    assert site.requests[before:] == [f"pages.test:{site.port} /go?to={site.url('/article')}"]

    followed = await fetch(fetcher("pages.test", "127.0.0.0/8", resolver=resolver), start)
    assert followed.startswith(f"URL: {site.url('/article')}\nRedirected from: {start}")
    assert ARTICLE_FACT in followed


async def test_a_name_that_resolves_to_a_private_address_is_refused(site):
    """Checked on the resolved address: the name itself looks harmless."""
    resolver = names({"intranet.example.com": ["10.20.30.40"]})
    result = await fetch(fetcher(resolver=resolver), "http://intranet.example.com/secrets")
    assert result.startswith(
        "Error: refused to connect to intranet.example.com (which resolves to 10.20.30.40): "
        "that is a private address"
    )
    assert resolver.calls == ["intranet.example.com"]


async def test_one_refused_address_of_a_name_refuses_the_name(site):
    resolver = names({"mixed.test": ["127.0.0.1", "169.254.169.254"]})
    before = len(site.requests)
    result = await fetch(
        fetcher("127.0.0.1", resolver=resolver), f"http://mixed.test:{site.port}/article"
    )
    assert "(which resolves to 169.254.169.254): that is the address of a cloud metadata" in result
    assert len(site.requests) == before


async def test_the_connection_goes_to_the_checked_address_with_the_name_as_host(site):
    """The name is resolved once; the request carries the name, the socket the address."""
    resolver = names({"pages.test": ["127.0.0.1"]})
    result = await fetch(
        fetcher("127.0.0.1", resolver=resolver), f"http://pages.test:{site.port}/article"
    )
    assert ARTICLE_FACT in result and resolver.calls == ["pages.test"]
    assert site.requests[-1] == f"pages.test:{site.port} /article"


async def test_an_address_that_does_not_answer_gives_way_to_the_next(site):
    """A name with an IPv6 and an IPv4 address: nothing listens on [::1] here."""
    resolver = names({"pages.test": ["::1", "127.0.0.1"]})
    tools = fetcher("127.0.0.1", "::1", resolver=resolver)
    result = await fetch(tools, f"http://pages.test:{site.port}/article")
    assert ARTICLE_FACT in result


@pytest.mark.parametrize(
    "host", ["localhost", "127.1", "2130706433", "0x7f000001", "[::ffff:7f00:1]"]
)
async def test_other_spellings_of_loopback_are_refused_by_the_system_resolver(site, host):
    """No resolver injected: the system's, which reads these as 127.0.0.1 (or ::1)."""
    before = len(site.requests)
    tools = ToolRegistry([fetch_url_tool(FetchConfig())])
    result = await fetch(tools, f"http://{host}:{site.port}/article")
    assert result.startswith("Error: refused to connect to "), result
    assert "a loopback address" in result
    assert len(site.requests) == before


async def test_an_unknown_name_is_a_clear_error():
    result = await fetch(fetcher(), "https://no-such-host.test/")
    assert result.startswith("Error: could not resolve the host no-such-host.test")


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://ftp.example.com/pub/file.txt",
        "gopher://example.com/",
        "javascript:alert(1)",
        "example.com/page",
    ],
)
async def test_only_http_and_https_are_fetched(url):
    resolver = names({})
    result = await fetch(fetcher("0.0.0.0/0", resolver=resolver), url)
    assert result.startswith("Error: only http:// and https:// URLs can be fetched")
    assert resolver.calls == []


async def test_a_redirect_to_another_scheme_is_refused(site):
    result = await fetch(fetcher("127.0.0.1"), site.url("/go?to=file:///etc/passwd"))
    assert result.startswith("Error: only http:// and https:// URLs can be fetched, not file://")
    assert "a redirect from" in result


async def test_a_50_mb_response_is_cut_at_the_cap(site):
    cap = 1024 * 1024
    result = await fetch(
        fetcher("127.0.0.1", max_bytes=cap, max_chars=2_000), site.url("/big?mb=50")
    )
    assert "all work and no play" in result
    assert f"[The download stopped at the limit of {cap:,} bytes" in result
    assert f'read on with fetch_url(url="{site.url("/big?mb=50")}", start_index=2000)]' in result
    # The server noticed the client hang up long before the 50 MB.
    for _ in range(100):
        if site.big_bytes_sent:
            break
        await asyncio.sleep(0.05)
    assert site.big_bytes_sent and site.big_bytes_sent[-1] < 50 * 1024 * 1024


async def test_a_server_that_does_not_answer_times_out(site):
    result = await fetch(fetcher("127.0.0.1", read_seconds=0.5), site.url("/slow?s=3"))
    assert result == "Error: 127.0.0.1 did not answer within 0.5 seconds"


async def test_a_page_still_arriving_at_the_deadline_is_given_as_far_as_it_came(site):
    tools = fetcher("127.0.0.1", total_seconds=1.0, read_seconds=1.0)
    result = await fetch(tools, site.url("/trickle?s=0.1&n=100"))
    assert "piece 0\n" in result and "piece 99" not in result
    assert "[The server was still sending after 1 seconds" in result


async def test_a_long_page_is_read_in_parts_each_saying_where_it_stands_rt_4(site):
    tools = fetcher("127.0.0.1", max_chars=100)
    url = site.url("/article")
    first = await fetch(tools, url)
    total = int(first.rsplit(" of ", 1)[1].split(";")[0])
    parts = -(-total // 100)
    assert first.endswith(
        f"[Part 1 of {parts}: characters 0–100 of {total}; "
        f'read on with fetch_url(url="{url}", start_index=100)]'
    )
    second = await fetch(tools, url, start_index=100, max_length=50)
    assert second.endswith(
        f"[Part 3 of {-(-total // 50)}: characters 100–150 of {total}; "
        f'read on with fetch_url(url="{url}", start_index=150, max_length=50)]'
    )
    last = await fetch(tools, url, start_index=total - 10, max_length=50)
    assert last.endswith(f"characters {total - 10}–{total} of {total}; the end of the text.]")


async def test_raw_gives_the_html_source(site):
    result = await fetch(fetcher("127.0.0.1"), site.url("/article"), raw=True)
    assert "<nav>" in result and "NAV_MARKER" in result


async def test_stopping_a_fetch_hangs_up_on_the_server(site):
    """A run stopped mid-download cancels the call: the connection is closed, the server
    stops sending."""
    # A body far larger than what loopback carries before the cancel, however idle or busy
    # the machine.
    tools = fetcher("127.0.0.1", max_bytes=4096 * 1024 * 1024, total_seconds=60.0)
    sent_before = len(site.big_bytes_sent)
    begun_before = site.big_downloads_begun
    task = asyncio.create_task(fetch(tools, site.url("/big?mb=2000")))
    async with asyncio.timeout(30):  # cancelled mid-download: once the body is flowing
        while site.big_downloads_begun == begun_before:  # noqa: ASYNC110 - the server's thread
            await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):
        if len(site.big_bytes_sent) > sent_before:
            break
        await asyncio.sleep(0.05)
    assert site.big_bytes_sent[sent_before:] and site.big_bytes_sent[-1] < 2000 * 1024 * 1024


async def test_each_fetch_is_logged_without_its_query(site, caplog):
    caplog.set_level(logging.INFO, logger="fimone.agent.tools.web")
    await fetch(fetcher("127.0.0.1"), site.url("/data.json?token=s3cret"))
    await fetch(fetcher(), site.url("/article?token=s3cret"))
    logged = [r.getMessage() for r in caplog.records if r.name == "fimone.agent.tools.web"]
    size = len(json.dumps(DATA, separators=(",", ":")))
    assert logged[0] == (
        f"fetch_url http://127.0.0.1/data.json: HTTP 200, application/json, {size} bytes"
    )
    assert logged[1].startswith("fetch_url http://127.0.0.1/article: refused to connect")
    assert "s3cret" not in " ".join(logged)


@pytest.fixture(scope="module")
def certificates():
    return make_certificates(["pages.test"])


@pytest.fixture(scope="module")
def tls_site(certificates):
    with serve_pages(tls=certificates.server) as server:
        yield server


def tls_fetcher(certificates, mapping: dict[str, list[str]]) -> ToolRegistry:
    config = FetchConfig(
        policy=AddressPolicy.from_entries(["127.0.0.1"]),
        limits=FetchLimits(total_seconds=10.0),
        resolver=names(mapping),
        tls=certificates.client,
    )
    return ToolRegistry([fetch_url_tool(config)])


async def test_https_goes_to_the_checked_address_with_the_name_in_sni_and_the_certificate(
    tls_site, certificates
):
    tools = tls_fetcher(certificates, {"pages.test": ["127.0.0.1"]})
    result = await fetch(tools, f"https://pages.test:{tls_site.port}/article")
    assert result.startswith(f"URL: https://pages.test:{tls_site.port}/article\n")
    assert ARTICLE_FACT in result
    assert tls_site.sni[-1] == "pages.test"
    assert tls_site.requests[-1] == f"pages.test:{tls_site.port} /article"


async def test_https_to_a_name_the_certificate_does_not_cover_is_refused(tls_site, certificates):
    """Resolving another name to the same address does not borrow the certificate."""
    tools = tls_fetcher(certificates, {"other.test": ["127.0.0.1"]})
    before = len(tls_site.requests)
    result = await fetch(tools, f"https://other.test:{tls_site.port}/article")
    assert result.startswith("Error: "), result
    assert "certificate" in result.lower()
    assert tls_site.sni[-1] == "other.test" and len(tls_site.requests) == before


async def test_a_compressed_body_is_cut_at_the_cap_after_decompression(site):
    """100 MB of text in a gzip body of under 1 MB: never more than the cap is unpacked."""
    cap = 1024 * 1024
    tools = fetcher("127.0.0.1", max_bytes=cap, max_chars=500)
    await fetch(tools, site.url("/article.gz"))  # imports and caches before measuring
    tracemalloc.start()
    try:
        result = await fetch(tools, site.url("/bomb"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert f"[The download stopped at the limit of {cap:,} bytes" in result
    assert site.bomb_sizes[-1] < cap  # what was sent is far smaller than what it unpacks to
    assert peak < 16 * cap, f"peak {peak:,} bytes"


async def test_the_page_is_turned_into_text_off_the_event_loop(site, monkeypatch):
    from fimone.agent.tools import web

    threads = []

    def recording_page_text(fetched, *, raw=False, pool=None, owner=""):
        threads.append(threading.current_thread().name)
        return real_page_text(fetched, raw=raw, pool=pool, owner=owner)

    real_page_text = web.page_text
    monkeypatch.setattr(web, "page_text", recording_page_text)
    result = await fetch(fetcher("127.0.0.1"), site.url("/article"))
    assert ARTICLE_FACT in result
    assert threads and threads[0].startswith("fetch_url")
    assert threads[0] != threading.current_thread().name
