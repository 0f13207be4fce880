// Code blocks of rendered Markdown: a bar above each with the fence's language ("python",
// from the info string; the server keeps it as the code element's ``language-*`` class)
// and a Copy button that copies that block's text, not the whole answer. Every path that
// puts rendered Markdown on the page calls ``decorateCodeBlocks`` on it, so a block looks
// the same live, after a reload and inside a DAG step's result.

const LANGUAGE_CLASS = /(?:^|\s)language-(\S+)/;

// The language named by the fence, or "" for a block without one.
export function codeLanguage(code) {
  const match = LANGUAGE_CLASS.exec(code?.className || "");
  return match ? match[1] : "";
}

function copyButton(code) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "code-copy";
  button.textContent = gettext("Copy");
  button.setAttribute("aria-label", gettext("Copy this code"));
  button.addEventListener("click", async () => {
    try {
      // The fence's closing newline is not part of the code.
      await navigator.clipboard.writeText(code.textContent.replace(/\n$/, ""));
      button.textContent = gettext("Copied");
    } catch (err) {
      button.textContent = gettext("Copy failed");
    }
    setTimeout(() => (button.textContent = gettext("Copy")), 1500);
  });
  return button;
}

// Wraps every not yet wrapped <pre> under ``root``; calling it again changes nothing.
export function decorateCodeBlocks(root) {
  for (const pre of root.querySelectorAll("pre")) {
    if (pre.parentElement?.classList.contains("code-block")) continue;
    const code = pre.querySelector("code") || pre;
    const language = codeLanguage(code);
    const head = document.createElement("div");
    head.className = "code-head";
    const label = document.createElement("span");
    label.className = "code-lang";
    label.textContent = language; // text, never markup: the info string is the model's
    if (!language) label.hidden = true;
    head.append(label, copyButton(code));
    const block = document.createElement("div");
    block.className = "code-block";
    pre.replaceWith(block);
    block.append(head, pre);
  }
}
