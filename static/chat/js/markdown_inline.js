// The inline part of the live Markdown renderer (markdown_live.js): emphasis, code spans,
// links, autolinks, entities and line breaks, built as DOM nodes; text only ever goes in as
// text nodes, and links are made as the server's sanitiser leaves them.

// markdown-it refuses these link targets outright (the text stays as it was written).
const BAD_PROTOCOL = /^(vbscript|javascript|file|data):/i;
const SCHEME = /^([a-z][a-z0-9+.-]{1,31}):/i;
const ALLOWED_SCHEMES = new Set(["http", "https", "mailto"]);
const PUNCTUATION = /[!-/:-@[-`{-~]/;
const ENTITIES = {
  amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0", copy: "©", reg: "®",
  trade: "™", hellip: "…", mdash: "—", ndash: "–", laquo: "«", raquo: "»", times: "×",
};

// Appends the inline content of ``source`` to ``parent``.
export function renderInline(parent, source) {
  const out = new Inline(parent);
  out.run(source);
  out.flush();
  parent.normalize();
}

class Inline {
  constructor(parent) {
    this.parent = parent;
    this.text = "";
  }

  flush() {
    if (this.text) this.parent.append(this.text);
    this.text = "";
  }

  node(child) {
    this.flush();
    this.parent.append(child);
  }

  nested(tag, source) {
    const child = document.createElement(tag);
    renderInline(child, source);
    this.node(child);
    return child;
  }

  run(s) {
    let i = 0;
    while (i < s.length) {
      const c = s[i];
      if (c === "\\") i = this.escape(s, i);
      else if (c === "\n") i = this.lineBreak(s, i);
      else if (c === "`") i = this.codeSpan(s, i);
      else if (c === "&") i = this.entity(s, i);
      else if (c === "<") i = this.autolink(s, i);
      else if (c === "[" || (c === "!" && s[i + 1] === "[")) i = this.link(s, i);
      else if (c === "*" || c === "_" || (c === "~" && s[i + 1] === "~")) i = this.emphasis(s, i);
      else {
        this.text += c;
        i += 1;
      }
    }
  }

  escape(s, i) {
    const next = s[i + 1];
    if (next === "\n") {
      this.node(document.createElement("br"));
      this.text += "\n";
      return i + 2;
    }
    if (next !== undefined && PUNCTUATION.test(next)) {
      this.text += next;
      return i + 2;
    }
    this.text += "\\";
    return i + 1;
  }

  lineBreak(s, i) {
    const hard = / {2,}$/.test(this.text);
    this.text = this.text.replace(/[ \t]+$/, "");
    if (hard) this.node(document.createElement("br"));
    this.text += "\n";
    let j = i + 1;
    while (s[j] === " " || s[j] === "\t") j += 1;
    return j;
  }

  codeSpan(s, i) {
    const run = s.slice(i).match(/^`+/)[0];
    let j = i + run.length;
    while (j < s.length) {
      const k = s.indexOf(run, j);
      if (k < 0) break;
      const after = s.slice(k).match(/^`+/)[0];
      if (after.length === run.length) {
        let code = s.slice(i + run.length, k).replace(/\n/g, " ");
        if (code.length > 2 && code.startsWith(" ") && code.endsWith(" ") && code.trim()) {
          code = code.slice(1, -1);
        }
        const node = document.createElement("code");
        node.textContent = code;
        this.node(node);
        return k + run.length;
      }
      j = k + after.length;
    }
    this.text += run;
    return i + run.length;
  }

  entity(s, i) {
    const match = /^&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([A-Za-z]{2,8}));/.exec(s.slice(i, i + 12));
    if (!match) {
      this.text += "&";
      return i + 1;
    }
    let value = null;
    const code = match[1] ? parseInt(match[1], 10) : match[2] ? parseInt(match[2], 16) : null;
    if (code !== null) value = code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : "\ufffd";
    else value = ENTITIES[match[3]] ?? null;
    if (value === null) {
      this.text += "&";
      return i + 1;
    }
    this.text += value;
    return i + match[0].length;
  }

  autolink(s, i) {
    const match = /^<([a-z][a-z0-9+.-]{1,31}:[^<>\s]*|[\w.!#$%&'*+/=?^`{|}~-]+@[\w-]+(?:\.[\w-]+)+)>/i.exec(s.slice(i));
    if (!match) {
      this.text += "<";
      return i + 1;
    }
    const target = match[1].includes(":") ? match[1] : `mailto:${match[1]}`;
    if (BAD_PROTOCOL.test(target)) {
      this.text += "<";
      return i + 1;
    }
    const anchor = safeAnchor(target, null);
    anchor.textContent = match[1];
    this.node(anchor);
    return i + match[0].length;
  }

  link(s, i) {
    const image = s[i] === "!";
    const open = image ? i + 1 : i;
    const close = matchingBracket(s, open);
    const target = close < 0 ? null : linkTarget(s, close + 1);
    if (!target || BAD_PROTOCOL.test(target.href)) {
      this.text += s[i];
      return i + 1;
    }
    const label = s.slice(open + 1, close);
    const anchor = safeAnchor(target.href, target.title);
    if (image) anchor.textContent = plainText(label) || target.href;
    else renderInline(anchor, label);
    this.node(anchor);
    return target.end;
  }

  emphasis(s, i) {
    const c = s[i];
    const run = s.slice(i).match(c === "~" ? /^~+/ : c === "*" ? /^\*+/ : /^_+/)[0];
    const before = s[i - 1] ?? " ";
    const after = s[i + run.length] ?? " ";
    const opens = !/\s/.test(after) && !(c === "_" && /[\p{L}\p{N}]/u.test(before));
    if (!opens || (c === "~" && run.length !== 2)) {
      this.text += run;
      return i + run.length;
    }
    const size = c === "~" ? 2 : Math.min(run.length, 3);
    const end = findCloser(s, i + run.length, c, size);
    if (end < 0) {
      this.text += run;
      return i + run.length;
    }
    this.text += run.slice(size);
    const inner = s.slice(i + run.length, end);
    if (c === "~") this.nested("s", inner);
    else if (size === 3) {
      const em = document.createElement("em");
      const strong = document.createElement("strong");
      renderInline(strong, inner);
      em.append(strong);
      this.node(em);
    } else this.nested(size === 2 ? "strong" : "em", inner);
    return end + size;
  }
}

// Where the run of ``size`` ``c`` closing an emphasis opened before ``from`` starts, or -1.
function findCloser(s, from, c, size) {
  let i = from;
  while (i < s.length) {
    if (s[i] === "\\") {
      i += 2;
      continue;
    }
    if (s[i] === "`") {
      const run = s.slice(i).match(/^`+/)[0];
      const k = s.indexOf(run, i + run.length);
      i = k < 0 ? i + run.length : k + run.length;
      continue;
    }
    if (s[i] === c) {
      const run = s.slice(i).match(c === "*" ? /^\*+/ : c === "_" ? /^_+/ : /^~+/)[0];
      const before = s[i - 1];
      const after = s[i + run.length] ?? " ";
      const closes = !/\s/.test(before) && !(c === "_" && /[\p{L}\p{N}]/u.test(after));
      if (closes && (run.length === size || (size < 3 && run.length >= 3 && c !== "~"))) return i;
      i += run.length;
      continue;
    }
    i += 1;
  }
  return -1;
}

function matchingBracket(s, open) {
  let depth = 0;
  for (let i = open; i < s.length; i += 1) {
    if (s[i] === "\\") i += 1;
    else if (s[i] === "[") depth += 1;
    else if (s[i] === "]") {
      depth -= 1;
      if (depth === 0) return i;
    }
  }
  return -1;
}

// ``(href "title")`` right after a link's text: {href, title, end}, or null.
function linkTarget(s, at) {
  if (s[at] !== "(") return null;
  let i = at + 1;
  while (s[i] === " " || s[i] === "\n") i += 1;
  let href = "";
  if (s[i] === "<") {
    const end = s.indexOf(">", i);
    if (end < 0 || s.slice(i, end).includes("\n")) return null;
    href = s.slice(i + 1, end);
    i = end + 1;
  } else {
    let depth = 0;
    for (; i < s.length; i += 1) {
      const c = s[i];
      if (c === "\\" && PUNCTUATION.test(s[i + 1] || "")) {
        href += s[i + 1];
        i += 1;
        continue;
      }
      if (/\s/.test(c) || (c === ")" && depth === 0)) break;
      if (c === "(") depth += 1;
      if (c === ")") depth -= 1;
      href += c;
    }
  }
  while (s[i] === " " || s[i] === "\n") i += 1;
  let title = null;
  const quote = { '"': '"', "'": "'", "(": ")" }[s[i]];
  if (quote) {
    const end = s.indexOf(quote, i + 1);
    if (end < 0) return null;
    title = s.slice(i + 1, end);
    i = end + 1;
    while (s[i] === " " || s[i] === "\n") i += 1;
  }
  if (s[i] !== ")") return null;
  return { href, title, end: i + 1 };
}

function plainText(source) {
  const holder = document.createElement("span");
  renderInline(holder, source);
  return holder.textContent;
}

// A link as the server's sanitiser leaves it: the target only with an allowed scheme (or
// none), encoded as markdown-it encodes it, and rel="noopener noreferrer".
function safeAnchor(href, title) {
  const anchor = document.createElement("a");
  const scheme = SCHEME.exec(href);
  if (!scheme || ALLOWED_SCHEMES.has(scheme[1].toLowerCase())) anchor.setAttribute("href", encodeHref(href));
  if (title) anchor.setAttribute("title", title);
  anchor.setAttribute("rel", "noopener noreferrer");
  return anchor;
}

function encodeHref(href) {
  return href.replace(/%(?![0-9a-fA-F]{2})|[^\w\-.~:/?#@!$&'()*+,;=%]/gu, (c) => encodeURIComponent(c));
}
