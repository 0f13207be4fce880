"""What drawing Markdown while it streams costs the browser, per frame and per answer.

    .venv/bin/python bench/stream_render.py [--paragraphs 120] [--deltas-per-frame 3]

Serves static/chat/js over HTTP, opens it in Chromium (/usr/bin/chromium) and streams a
long Markdown answer (paragraphs, lists, tables and code blocks, cut into word-sized deltas
as providers send them) through ``StreamRender`` (static/chat/js/stream_render.js): a frame
after every ``--deltas-per-frame`` deltas, as ``requestAnimationFrame`` batches them. For
comparison, the naive way: the whole text so far rendered again every frame. Prints the
answer's size, the frames, the median and worst frame and the total of both ways.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import threading
from pathlib import Path

JS = Path(__file__).resolve().parents[1] / "static" / "chat" / "js"

BLOCKS = [
    "Paragraph {i} with **bold**, *emphasis*, `code` and a [link](https://example.com/{i}). "
    + " ".join(["The model keeps writing a sentence of ordinary length here."] * 4),
    "- item {i}.1 with `code`\n- item {i}.2 with **bold**\n  - nested {i}\n- item {i}.3",
    "| Col | Value {i} |\n|:----|------:|\n| a | 1 |\n| b | 2 |\n| c | 3 |",
    "```python\ndef f_{i}(x):\n    # a comment\n    return x * {i}\n\n\nprint(f_{i}(2))\n```",
]

MEASURE = """async ([text, perFrame]) => {
  const { StreamRender } = await import("/stream_render.js");
  const { renderBlocks } = await import("/markdown_live.js");
  const pieces = text.match(/[^ ]* ?/g).filter(Boolean);
  const run = (draw) => {
    const times = [];
    let shown = "";
    for (let i = 0; i < pieces.length; i += perFrame) {
      shown += pieces.slice(i, i + perFrame).join("");
      const start = performance.now();
      draw(shown);
      times.push(performance.now() - start);
    }
    return times;
  };
  const liveRoot = document.createElement("div");
  document.body.append(liveRoot);
  const live = new StreamRender(liveRoot);
  const incremental = run((shown) => {
    live.update(shown);
    live.render(); // the frame, without waiting for it
    liveRoot.getBoundingClientRect(); // and its layout
  });
  liveRoot.remove();
  const naiveRoot = document.createElement("div");
  document.body.append(naiveRoot);
  const naive = run((shown) => {
    naiveRoot.replaceChildren(...renderBlocks(shown.split("\\n")));
    naiveRoot.getBoundingClientRect(); // the layout the browser does each frame anyway
  });
  return { pieces: pieces.length, incremental, naive };
}"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def answer(paragraphs: int) -> str:
    return "\n\n".join(BLOCKS[i % len(BLOCKS)].format(i=i) for i in range(paragraphs))


def summary(times: list[float]) -> str:
    ordered = sorted(times)
    median = ordered[len(ordered) // 2]
    return f"median {median:.3f} ms, worst {ordered[-1]:.2f} ms, total {sum(times):.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--paragraphs", type=int, default=120)
    parser.add_argument("--deltas-per-frame", type=int, default=3)
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    handler = functools.partial(_Quiet, directory=str(JS))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    text = answer(args.paragraphs)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{server.server_port}/")
            result = page.evaluate(MEASURE, [text, args.deltas_per_frame])
            browser.close()
    finally:
        server.shutdown()
    frames = len(result["incremental"])
    print(f"answer: {len(text):,} characters, {result['pieces']:,} deltas, {frames:,} frames")
    print(f"stream_render (completed blocks kept): {summary(result['incremental'])}")
    print(f"whole text rendered every frame:       {summary(result['naive'])}")


if __name__ == "__main__":
    main()
