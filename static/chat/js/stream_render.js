// An answer shown as Markdown while it streams (docs/architecture.md, "Markdown while it
// streams"). The text is cut into blocks at blank lines outside code fences: a block that
// is complete is rendered once and its nodes stay; only the last, open block is rendered
// again, at most once per animation frame (an unclosed fence shows as an open code block).
// When the answer is done, the server's HTML replaces the live nodes only where the two
// differ, so the answer does not jump into its layout at the end.

import { renderBlocks } from "./markdown_live.js";

const BLANK = /^[ \t]*$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const FENCE_CLOSE = /^ {0,3}(`{3,}|~{3,})[ \t]*$/;
const LIST_LINE = /^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)/;
// What carries on a list after a blank line: another item, or a line indented under one.
const LIST_GOES_ON = /^(?: {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)| {2,}\S|\t)/;
// Newlines next to these tags are the renderer's layout, not content (see ``sameNodes``).
const BLOCK_TAG = "(?:p|ul|ol|li|blockquote|table|thead|tbody|tr|th|td|h[1-6]|hr|div)";
const NEWLINE_BEFORE_TAG = new RegExp(`\\n(?=</?${BLOCK_TAG}\\b)`, "g");
const NEWLINE_AFTER_TAG = new RegExp(`(</?${BLOCK_TAG}\\b[^>]*>)\\n`, "g");
const CARET = "stream-caret";

export class StreamRender {
  // ``decorate(container)`` adds what the page adds to a code block (its Copy button);
  // it is given the live blocks and the final HTML alike.
  constructor(root, { decorate = () => {} } = {}) {
    this.root = root;
    this.decorate = decorate;
    this.source = "";
    this.doneEnd = 0; // ``source`` up to here is in completed blocks
    this.openNodes = [];
    this.openSource = null;
    this.frame = 0;
  }

  // Showing a streamed answer (set by ``update``, cleared by ``finish`` and ``reset``).
  get active() {
    return this.openSource !== null;
  }

  // The whole answer text so far (deltas appended, or shortened by a retract).
  update(text) {
    if (!text.startsWith(this.source.slice(0, this.doneEnd))) this.reset();
    this.source = text;
    if (this.openSource === null) this.openSource = ""; // live from now on (``active``)
    if (!this.frame) {
      this.frame = requestAnimationFrame(() => {
        this.frame = 0;
        this.render();
      });
    }
  }

  // Forget the live render and empty the answer.
  reset() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.root.replaceChildren();
    this.source = "";
    this.doneEnd = 0;
    this.openNodes = [];
    this.openSource = null;
  }

  // Draw what arrived since the last frame now (the stream stopped or failed).
  settle() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.render();
    this.dropCaret();
  }

  render() {
    const fresh = [];
    for (let block = completedBlock(this.source, this.doneEnd); block; ) {
      fresh.push(...this.build(this.source.slice(this.doneEnd, block.end)));
      this.doneEnd = block.next;
      block = completedBlock(this.source, this.doneEnd);
    }
    const open = this.source.slice(this.doneEnd);
    if (!fresh.length && open === this.openSource) return;
    this.dropCaret();
    const previous = this.openNodes;
    this.openNodes = BLANK.test(open) ? [] : this.build(open);
    this.openSource = open;
    if (fresh.length) {
      for (const node of previous) node.remove();
      this.root.append(...fresh, ...this.openNodes);
    } else {
      // The open block again: a node that came out the same stays (a selection in it too).
      this.openNodes = keepSame(this.root, previous, this.openNodes);
    }
    this.placeCaret();
  }

  build(source) {
    const box = document.createElement("div");
    box.append(...renderBlocks(source.split("\n")));
    this.decorate(box);
    return [...box.childNodes];
  }

  // The blinking caret sits at the end of the text being written (not in a code block,
  // where it would add a line the finished block does not have).
  placeCaret() {
    this.dropCaret();
    let target = this.root.lastElementChild;
    while (target && /^(UL|OL|LI|BLOCKQUOTE|TABLE|THEAD|TBODY|TR)$/.test(target.tagName)) {
      const last = target.lastElementChild;
      if (!last || (target.tagName === "LI" && target.lastChild?.nodeType === Node.TEXT_NODE)) break;
      target = last;
    }
    if (target && /^(P|LI|H[1-6]|TD|TH)$/.test(target.tagName)) target.classList.add(CARET);
  }

  dropCaret() {
    for (const node of this.root.querySelectorAll(`.${CARET}`)) {
      node.classList.remove(CARET);
      if (!node.classList.length) node.removeAttribute("class");
    }
  }

  // The server's HTML (sanitised there) takes the place of the live nodes: a live node
  // that equals its final counterpart stays (same object, no relayout), the others are
  // replaced.
  finish(html) {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.dropCaret();
    const template = document.createElement("template");
    template.innerHTML = html; // sanitised server-side (nh3)
    this.decorate(template.content);
    const finals = [...template.content.childNodes].filter(meaningful);
    const lives = [...this.root.childNodes].filter(meaningful);
    keepSame(this.root, lives, finals);
    for (const node of [...this.root.childNodes]) if (!meaningful(node)) node.remove();
    this.openNodes = [];
    this.openSource = null;
  }
}

// ``fresh`` takes the place of ``old`` (nodes of ``root``, in order) where they differ: an
// old node equal to its fresh counterpart stays. Returns the nodes now in place.
function keepSame(root, old, fresh) {
  const oldKeys = old.map(nodeKey);
  const placed = [];
  let at = 0;
  for (const node of fresh) {
    const found = oldKeys.indexOf(nodeKey(node), at);
    if (found >= 0 && found - at < 8) {
      for (let k = at; k < found; k += 1) old[k].remove();
      placed.push(old[found]);
      at = found + 1;
      continue;
    }
    if (at < old.length) old[at].before(node);
    else if (placed.length) placed[placed.length - 1].after(node);
    else root.append(node);
    placed.push(node);
  }
  for (let k = at; k < old.length; k += 1) old[k].remove();
  return placed;
}

function meaningful(node) {
  return node.nodeType === Node.ELEMENT_NODE || (node.nodeType === Node.TEXT_NODE && !BLANK.test(node.data));
}

// A node as markup, without the newlines a renderer puts between block tags.
function nodeKey(node) {
  if (node.nodeType !== Node.ELEMENT_NODE) return `#text ${node.textContent}`;
  return node.outerHTML.replace(NEWLINE_BEFORE_TAG, "").replace(NEWLINE_AFTER_TAG, "$1");
}

// The first block of ``text`` from ``from`` that can no longer change: {end, next} (the
// block is text[from:end], the next starts at ``next``), or null. A block ends at a blank
// line outside a code fence; a list goes on when the next line is an item or indented.
export function completedBlock(text, from) {
  let pos = from;
  let fence = null;
  let content = false;
  let list = false;
  for (;;) {
    const newline = text.indexOf("\n", pos);
    if (newline < 0) return null; // the last line may still grow
    const line = text.slice(pos, newline);
    if (fence) {
      const close = FENCE_CLOSE.exec(line);
      if (close && close[1][0] === fence[0] && close[1].length >= fence.length) fence = null;
    } else if (BLANK.test(line)) {
      if (content) {
        const next = skipBlankLines(text, newline + 1);
        if (!list) return { end: pos, next };
        const rest = text.slice(next);
        const nextLine = rest.split("\n", 1)[0];
        if (!rest.includes("\n") && nextLine.trim().length < 4) return null; // undecided
        if (!LIST_GOES_ON.test(nextLine)) return { end: pos, next };
      }
    } else {
      const open = FENCE.exec(line);
      if (open) fence = open[1];
      if (LIST_LINE.test(line)) list = true;
      content = true;
    }
    pos = newline + 1;
  }
}

function skipBlankLines(text, pos) {
  for (;;) {
    const newline = text.indexOf("\n", pos);
    if (newline < 0 || !BLANK.test(text.slice(pos, newline))) return pos;
    pos = newline + 1;
  }
}
