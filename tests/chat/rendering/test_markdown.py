"""chat.rendering.markdown.render_markdown: CommonMark + tables, highlighted code, sanitised by
nh3."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from chat.rendering.markdown import render_markdown


def parsed_tags(html: str) -> list[tuple[str, dict]]:
    """The real elements in ``html`` (escaped text like ``&lt;img&gt;`` is not one)."""
    found: list[tuple[str, dict]] = []

    class Collector(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, dict(attrs)))

    Collector().feed(html)
    return found


def test_common_markdown_renders():
    html = render_markdown("# Title\n\n**bold** and *em* and `code`\n\n- a\n- b")
    assert "<h1>Title</h1>" in html
    assert "<strong>bold</strong>" in html and "<em>em</em>" in html
    assert "<code>code</code>" in html and "<li>a</li>" in html


def test_tables_render_with_alignment_as_classes_the_csp_allows():
    html = render_markdown("| n | v | c |\n|:--|--:|:-:|\n| x | 42 | m |")
    assert "<table>" in html and "<td>x</td>" not in html
    assert '<td class="align-left">x</td>' in html
    assert '<td class="align-right">42</td>' in html
    assert '<th class="align-center">c</th>' in html
    assert "style=" not in html  # the page's CSP blocks inline style attributes


def test_no_table_cell_keeps_a_style_or_a_foreign_class():
    html = render_markdown('| <td style="color:red"> | b |\n|:-:|---|\n| <th class="x"> | c |')
    cells = [attrs for tag, attrs in parsed_tags(html) if tag in ("th", "td")]
    assert cells and all(set(attrs) <= {"class"} for attrs in cells)
    assert {attrs.get("class") for attrs in cells} == {"align-center", None}


def test_fenced_code_keeps_its_language_class():
    html = render_markdown("```python\nprint('hi')\n```")
    assert '<pre><code class="language-python">' in html


@pytest.mark.parametrize(
    "source",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        '<a href="javascript:alert(1)">x</a>',
        "[click](javascript:alert(1))",
        "<iframe src=https://evil.example></iframe>",
        '<div style="position:fixed">x</div>',
    ],
)
def test_active_content_never_survives(source):
    tags = parsed_tags(render_markdown(source))
    assert {name for name, _ in tags} <= {"p"}  # only harmless text remains
    assert all(not attrs for _, attrs in tags)


def test_links_get_noopener_noreferrer():
    html = render_markdown("[docs](https://example.com/x)")
    assert html.strip() == (
        '<p><a href="https://example.com/x" rel="noopener noreferrer">docs</a></p>'
    )


def test_images_become_links_so_the_browser_fetches_nothing():
    html = render_markdown("![chart of *sales*](https://evil.example/p.png?leak=secret)")
    assert "<img" not in html
    assert '<a href="https://evil.example/p.png?leak=secret"' in html
    assert ">chart of sales</a>" in html


def test_empty_text_is_empty_html():
    assert render_markdown("") == ""


def test_fenced_code_is_highlighted_on_the_server_with_token_classes():
    html = render_markdown('```python\ndef f(x):\n    return "<b>" + x  # note\n```')
    spans = [attrs.get("class") for tag, attrs in parsed_tags(html) if tag == "span"]
    assert {"tok-k", "tok-nf", "tok-s2", "tok-c1"} <= set(spans)
    assert all(cls and cls.startswith("tok-") for cls in spans)
    assert '<code class="language-python">' in html
    assert "&lt;b&gt;" in html and "<b>" not in html  # code text stays escaped


@pytest.mark.parametrize("fence", ["```", "```no-such-language"])
def test_code_without_a_known_language_stays_plain(fence):
    html = render_markdown(f"{fence}\nprint(1) <i>\n```")
    assert "<span" not in html and "&lt;i&gt;" in html


def test_a_span_class_that_is_not_a_token_class_is_removed():
    from chat.rendering.markdown import _keep_attribute

    assert _keep_attribute("span", "class", "tok-kd") == "tok-kd"
    assert _keep_attribute("span", "class", "evil overlay") is None
    assert _keep_attribute("span", "class", "language-python") is None


async def test_a_long_answer_renders_the_same_off_the_event_loop():
    from chat.rendering.markdown import OFF_LOOP_CHARS, render_markdown, render_markdown_async

    long = "\n\n".join(f"Paragraph **{i}** with `code` and <b>raw</b>." for i in range(900))
    assert len(long) > OFF_LOOP_CHARS
    assert await render_markdown_async(long) == render_markdown(long)
    assert await render_markdown_async("*short*") == render_markdown("*short*")
