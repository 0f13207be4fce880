// The light / dark / system switch in the sidebar. The choice is kept in this browser's
// localStorage (theme_init.js applies it before the page is drawn) and reaches the other
// open tabs through the storage event.

const KEY = "theme";
const MODES = ["auto", "light", "dark"];

export function currentTheme() {
  const mode = document.documentElement.dataset.theme;
  return MODES.includes(mode) ? mode : "auto";
}

export function applyTheme(mode) {
  if (!MODES.includes(mode)) mode = "auto";
  document.documentElement.dataset.theme = mode;
  for (const radio of document.querySelectorAll('input[name="theme"]')) radio.checked = radio.value === mode;
}

export function setUpThemeSwitch() {
  applyTheme(currentTheme());
  for (const radio of document.querySelectorAll('input[name="theme"]')) {
    radio.addEventListener("change", () => {
      if (!radio.checked) return;
      applyTheme(radio.value);
      try {
        localStorage.setItem(KEY, radio.value);
      } catch (err) {
        /* not kept past this page, but applied */
      }
    });
  }
  window.addEventListener("storage", (event) => {
    if (event.key === KEY) applyTheme(event.newValue || "auto");
  });
}

setUpThemeSwitch();
