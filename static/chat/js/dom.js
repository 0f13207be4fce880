// Small DOM helpers shared by the chat UI's views: elements built from attributes and
// children (text only ever through textContent), stroke icons, and the fixed order of an
// answer's actions.

// An answer's row of actions keeps one order however its parts arrive (live, the usage
// card comes last; after a reload, first): versions, usage, Copy, Pin, Regenerate, the rest.
const ACTION_ORDER = [".versions", ".usage-wrap", ".copy-btn", ".pin-btn", ".btn-regenerate"];

function actionRank(node) {
  const rank = ACTION_ORDER.findIndex((selector) => node.matches?.(selector));
  return rank < 0 ? ACTION_ORDER.length : rank;
}

export function placeAction(actions, node) {
  const rank = actionRank(node);
  const after = [...actions.children].find((child) => actionRank(child) > rank);
  actions.insertBefore(node, after || null);
  return node;
}

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

const SVG_NS = "http://www.w3.org/2000/svg";
const ICON_PATHS = {
  edit: "M4 20h4L19 9l-4-4L4 16v4zM14 6l4 4",
  trash: "M4 7h16M9 7V4h6v3M6 7l1 13h10l1-13M10 11v6M14 11v6",
  pin: "M9 4h6l-1 6 4 4H6l4-4-1-6zM12 14v7",
  download: "M12 4v11M7 10l5 5 5-5M5 20h14",
  folder: "M3 6h6l2 2h10v11H3zM3 10h18",
  settings: "M4 7h10M18 7h2M4 17h4M12 17h8M14 5v4M8 15v4",
  plus: "M12 5v14M5 12h14",
  caret: "M9 6l6 6-6 6",
};

// A small stroke icon; decorative (the button carries the accessible label).
export function icon(name) {
  const svg = document.createElementNS(SVG_NS, "svg");
  for (const [k, v] of Object.entries({
    viewBox: "0 0 24 24", width: "16", height: "16", fill: "none", stroke: "currentColor",
    "stroke-width": "1.8", "stroke-linecap": "round", "stroke-linejoin": "round",
    "aria-hidden": "true", focusable: "false",
  })) svg.setAttribute(k, v);
  const path = document.createElementNS(SVG_NS, "path");
  path.setAttribute("d", ICON_PATHS[name]);
  svg.append(path);
  return svg;
}
