"""Which words a page shows cut across two lines ("Modellkonfiguratione|n"): a label wraps
between words, or is hyphenated by the browser (``hyphens: auto`` with the page's
``lang``), never broken inside a word. Han and kana text may break between any two
characters, as those languages do, so only runs of letters of alphabetic scripts count."""

from __future__ import annotations

_BROKEN_WORDS_JS = """(selector) => {
  const broken = [];
  const word = /[\\p{Script=Latin}\\p{Script=Cyrillic}\\p{Script=Greek}\\p{N}]{2,}/gu;
  const shown = (e) => e.getClientRects().length && getComputedStyle(e).visibility !== 'hidden';
  for (const root of document.querySelectorAll(selector)) {
    if (!shown(root)) continue;
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const host = node.parentElement;
      if (!host || !shown(host) || host.closest('pre, code, textarea, input')) continue;
      const style = getComputedStyle(host);
      // Broken only by hyphenation: the browser put a hyphen at a syllable.
      const onlyHyphenated = style.hyphens === 'auto' && style.wordBreak === 'normal' &&
        style.overflowWrap === 'normal';
      for (const match of node.data.matchAll(word)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0)
          .map((r) => Math.round(r.top)));
        if (tops.size > 1 && !onlyHyphenated) {
          broken.push(`${match[0]} (in ${host.tagName.toLowerCase()}.${host.className})`);
        }
      }
    }
  }
  return broken;
}"""


def broken_words(page, selector: str = "body") -> list[str]:
    """The words under ``selector`` that the page shows cut across lines."""
    return page.evaluate(_BROKEN_WORDS_JS, selector)
