// Markdown to DOM nodes for an answer that is still streaming (docs/architecture.md,
// "Markdown while it streams"); its blocks here, inline content in markdown_inline.js. The
// finished answer is rendered on the server (markdown-it + nh3); this renders the same
// CommonMark-and-tables subset the same way, so that most blocks are already in their
// final form while the model writes.
//
// Safe by construction: every piece of text goes in through text nodes, never as HTML, and
// only the server's allow-list of tags and attributes is made (links: http, https, mailto
// or relative, with rel="noopener noreferrer"; images become links; a code block's class is
// language-<name>). Raw HTML in the source is shown as text, as the server shows it.

import { renderInline } from "./markdown_inline.js";

const LANGUAGE_CLASS = /^[\w+#.-]{1,40}$/;
const FENCE = /^( {0,3})(`{3,}|~{3,})(.*)$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+|$)(.*)$/;
const SETEXT = /^ {0,3}(=+|-+)[ \t]*$/;
const DELIMITER_CELL = /^:?-+:?$/;
const BLANK = /^[ \t]*$/;

// ---- blocks ---------------------------------------------------------------------------

// The nodes of ``lines`` (an array of lines without their "\n"). An unclosed code fence is
// an open code block holding everything after it.
export function renderBlocks(lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (BLANK.test(line)) {
      i += 1;
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence && !(fence[2][0] === "`" && fence[3].includes("`"))) {
      i = codeFence(lines, i, fence, out);
      continue;
    }
    if (/^( {4}|\t)/.test(line)) {
      i = indentedCode(lines, i, out);
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      out.push(inlineElement(`h${heading[1].length}`, (heading[2] || "").trim()));
      i += 1;
      continue;
    }
    if (RULE.test(line)) {
      out.push(document.createElement("hr"));
      i += 1;
      continue;
    }
    if (QUOTE.test(line)) {
      i = blockquote(lines, i, out);
      continue;
    }
    if (ITEM.test(line)) {
      i = list(lines, i, out);
      continue;
    }
    if (i + 1 < lines.length && tableStart(lines[i], lines[i + 1])) {
      i = table(lines, i, out);
      continue;
    }
    i = paragraph(lines, i, out);
  }
  return out;
}

function codeFence(lines, start, fence, out) {
  const indent = fence[1].length;
  const marker = fence[2];
  const language = fence[3].trim().split(/\s+/)[0] || "";
  const body = [];
  let i = start + 1;
  for (; i < lines.length; i += 1) {
    const close = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(lines[i]);
    if (close && close[1][0] === marker[0] && close[1].length >= marker.length) {
      i += 1;
      break;
    }
    body.push(lines[i].replace(new RegExp(`^ {0,${indent}}`), ""));
  }
  const code = document.createElement("code");
  if (language && LANGUAGE_CLASS.test(language)) code.className = `language-${language}`;
  code.textContent = body.map((l) => `${l}\n`).join("");
  const pre = document.createElement("pre");
  pre.append(code);
  out.push(pre);
  return i;
}

function indentedCode(lines, start, out) {
  const body = [];
  let i = start;
  for (; i < lines.length && (/^( {4}|\t)/.test(lines[i]) || BLANK.test(lines[i])); i += 1) {
    body.push(lines[i].replace(/^( {4}|\t)/, ""));
  }
  while (body.length && BLANK.test(body[body.length - 1])) body.pop();
  const code = document.createElement("code");
  code.textContent = body.map((l) => `${l}\n`).join("");
  const pre = document.createElement("pre");
  pre.append(code);
  out.push(pre);
  return i;
}

function blockquote(lines, start, out) {
  const inner = [];
  let i = start;
  for (; i < lines.length; i += 1) {
    const quoted = QUOTE.exec(lines[i]);
    if (quoted) inner.push(quoted[1]);
    else if (!BLANK.test(lines[i]) && inner.length && !startsBlock(lines[i])) inner.push(lines[i]);
    else break;
  }
  const node = document.createElement("blockquote");
  node.append(...renderBlocks(inner));
  out.push(node);
  return i;
}

function startsBlock(line) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line);
}

function list(lines, start, out) {
  const first = ITEM.exec(lines[start]);
  const ordered = /\d/.test(first[2]);
  const bullet = first[2].slice(-1);
  const items = [];
  let loose = false;
  let i = start;
  let blankBefore = false;
  while (i < lines.length) {
    const match = ITEM.exec(lines[i]);
    if (!match || match[2].slice(-1) !== bullet || /\d/.test(match[2]) !== ordered) break;
    if (blankBefore && items.length) loose = true;
    const width = match[1].length + match[2].length + Math.max(1, Math.min(match[3].length, 4));
    const body = [match[4]];
    i += 1;
    blankBefore = false;
    while (i < lines.length) {
      const line = lines[i];
      if (BLANK.test(line)) {
        blankBefore = true;
        body.push("");
        i += 1;
        continue;
      }
      const indent = line.match(/^ */)[0].length;
      if (indent >= width) {
        // A blank line between two parts of one item makes the list loose.
        if (blankBefore) loose = true;
        body.push(line.slice(width));
      } else if (!blankBefore && !startsBlock(line)) body.push(line); // a lazy continuation
      else break;
      blankBefore = false;
      i += 1;
    }
    while (body.length && !body[body.length - 1]) body.pop();
    items.push({ number: parseInt(first[2], 10), body });
  }
  const node = document.createElement(ordered ? "ol" : "ul");
  if (ordered && items[0].number !== 1) node.setAttribute("start", String(items[0].number));
  for (const item of items) {
    const li = document.createElement("li");
    const blocks = renderBlocks(item.body);
    if (loose) li.append(...blocks);
    else appendTight(li, blocks);
    node.append(li);
  }
  out.push(node);
  return i;
}

// A tight item shows its paragraphs' content without the <p>, and markdown-it puts a line
// break before a block that follows such content.
function appendTight(li, blocks) {
  let afterText = false;
  for (const block of blocks) {
    if (block.tagName === "P") {
      li.append(...block.childNodes);
      afterText = true;
    } else {
      if (afterText) li.append("\n");
      li.append(block);
      afterText = false;
    }
  }
  li.normalize();
}

function splitRow(line) {
  let row = line.trim();
  if (row.startsWith("|")) row = row.slice(1);
  if (row.endsWith("|") && !row.endsWith("\\|")) row = row.slice(0, -1);
  const cells = [];
  let cell = "";
  for (let i = 0; i < row.length; i += 1) {
    if (row[i] === "\\" && row[i + 1] === "|") {
      cell += "|";
      i += 1;
    } else if (row[i] === "|") {
      cells.push(cell.trim());
      cell = "";
    } else cell += row[i];
  }
  cells.push(cell.trim());
  return cells;
}

function tableStart(head, delimiter) {
  if (!head.includes("|") || !delimiter.includes("-")) return false;
  const cells = splitRow(delimiter);
  return cells.every((c) => DELIMITER_CELL.test(c)) && cells.length === splitRow(head).length;
}

function table(lines, start, out) {
  const head = splitRow(lines[start]);
  const aligns = splitRow(lines[start + 1]).map((c) => {
    if (c.startsWith(":") && c.endsWith(":")) return "center";
    if (c.endsWith(":")) return "right";
    return c.startsWith(":") ? "left" : "";
  });
  const row = (cells, tag) => {
    const tr = document.createElement("tr");
    head.forEach((_, k) => {
      const cell = inlineElement(tag, cells[k] ?? "");
      if (aligns[k]) cell.className = `align-${aligns[k]}`;
      tr.append(cell);
    });
    return tr;
  };
  const node = document.createElement("table");
  const thead = document.createElement("thead");
  thead.append(row(head, "th"));
  node.append(thead);
  let i = start + 2;
  const rows = [];
  for (; i < lines.length && !BLANK.test(lines[i]) && !startsBlock(lines[i]); i += 1) {
    rows.push(row(splitRow(lines[i]), "td"));
  }
  if (rows.length) {
    const tbody = document.createElement("tbody");
    tbody.append(...rows);
    node.append(tbody);
  }
  out.push(node);
  return i;
}

function paragraph(lines, start, out) {
  const text = [lines[start]];
  let i = start + 1;
  for (; i < lines.length; i += 1) {
    const line = lines[i];
    if (BLANK.test(line)) break;
    const setext = SETEXT.exec(line);
    if (setext) {
      const level = setext[1][0] === "=" ? 1 : 2;
      out.push(inlineElement(`h${level}`, text.map((l) => l.trim()).join("\n")));
      return i + 1;
    }
    if (i + 1 < lines.length && tableStart(line, lines[i + 1])) break;
    const item = ITEM.exec(line);
    if (item && !(item[4] === "" || (/\d/.test(item[2]) && parseInt(item[2], 10) !== 1))) break;
    if (startsBlock(line) && !item) break;
    text.push(line);
  }
  const source = text.map((l) => l.replace(/^[ \t]+/, "")).join("\n").replace(/[ \t]+$/, "");
  out.push(inlineElement("p", source));
  return i;
}

function inlineElement(tag, source) {
  const node = document.createElement(tag);
  renderInline(node, source);
  return node;
}
