"""Parsing hostile and merely large uploads: time to a document, or the refusal.

Run from the repo root:  .venv/bin/python bench/parsing.py [--code DIR] [--only NAME]

Each file goes to an extraction worker (``fimone.extract.isolated``) with the default
limits, as an upload does: the figure is the time to the answer, or the refusal
(``extraction_timeout`` after the 30 s limit and the worker's grace). ``--code DIR`` reads
with the ``fimone`` package found in DIR instead of this checkout's (its worker too), to
measure another version beside this one, e.g. the readers before linear parsing:

    mkdir -p /tmp/parse-before && git archive 77b1a9a fimone | tar -x -C /tmp/parse-before
    .venv/bin/python bench/parsing.py --code /tmp/parse-before

The files: runs of empty comments before a non-HTML tag (the HTML sniff), an XML file with
a 30-line licence header, Word files of 20,000 and 60,000 short paragraphs and the same
text as a .txt, a presentation of 1,200 slides, and the corners of the Markdown, table and
HTML readers (a heading line of 2,000 spaces, 20,000 blank lines, 8,000 ``,'`` pairs,
8,000 unclosed attribute quotes) and a text of one 10 MB paragraph (cut into pages).
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
_parser.add_argument("--code", help="directory holding the fimone package to measure")
_parser.add_argument("--only", help="run only the files whose name contains this")
ARGS = _parser.parse_args()
sys.path.insert(0, str(ROOT))
if ARGS.code:
    sys.path.insert(0, ARGS.code)

from fimone.extract import ExtractionError  # noqa: E402
from fimone.extract.isolated import ExtractionPool  # noqa: E402
from tests.support.documents import licence_xml, many_paragraph_docx  # noqa: E402


def paragraphs_txt(count: int) -> bytes:
    return "\n\n".join(f"Paragraph {n}." for n in range(1, count + 1)).encode()


def slides(count: int) -> bytes:
    import pptx

    presentation = pptx.Presentation()
    for n in range(count):
        slide = presentation.slides.add_slide(presentation.slide_layouts[1])
        slide.shapes.title.text = f"Slide {n}"
        slide.placeholders[1].text = f"Point {n}"
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


FILES: list[tuple[str, Callable[[], bytes]]] = [
    ("26 empty comments, then <root/>", lambda: b"<!---->" * 26 + b"<root/>"),
    ("40 empty comments, then <root/>", lambda: b"<!---->" * 40 + b"<root/>"),
    ("XML with a 30-line licence header", licence_xml),
    ("docx, 20,000 paragraphs", lambda: many_paragraph_docx(20_000)),
    ("docx, 60,000 paragraphs", lambda: many_paragraph_docx(60_000)),
    ("txt, the same 60,000 paragraphs", lambda: paragraphs_txt(60_000)),
    ("pptx, 1,200 slides", lambda: slides(1_200)),
    ("Markdown heading line of 2,000 spaces", lambda: b"# a" + b" " * 2_000 + b"b\n\n- x\n"),
    ("20,000 blank lines, then text", lambda: b"\n" * 20_000 + b"hello"),
    ("table: a,b then 8,000 ,' pairs", lambda: b"a,b\n" + b",'" * 8_000 + b"\nc,d\n"),
    ("HTML: 8,000 unclosed attribute quotes", lambda: b"<html><body>" + b"<a b='" * 8_000),
    ("txt, one paragraph of 10 MB", lambda: b"word " * 2_000_000),
]


def main() -> int:
    pool = ExtractionPool(workers=1)
    print(f"code: {ARGS.code or ROOT}")
    try:
        pool.extract(b"warm-up: start the worker before the first figure")
        for name, make in FILES:
            if ARGS.only and ARGS.only not in name:
                continue
            data = make()
            start = time.perf_counter()
            try:
                doc = pool.extract(data)
                outcome = f"{doc.kind}, {doc.page_count} pages, {doc.chars:,} characters"
            except ExtractionError as exc:
                outcome = f"refused: {exc.code}"
            elapsed = time.perf_counter() - start
            print(f"{name:<45} {len(data):>9,} bytes  {elapsed:7.2f} s  {outcome}", flush=True)
    finally:
        pool.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
