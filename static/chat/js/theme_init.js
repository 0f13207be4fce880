// The theme picked with the theme switch (theme.js), set before the page is drawn: this is
// a classic script in <head>, run before the body exists, so a dark page never flashes
// light first. Same storage key and values as Django admin's toggle ("auto", "light",
// "dark"): the two agree. Without a choice, or without storage, the system decides.
(function () {
  var mode = "auto";
  try {
    mode = window.localStorage.getItem("theme") || "auto";
  } catch (err) {
    /* storage refused (a privacy mode): follow the system */
  }
  if (mode !== "light" && mode !== "dark") mode = "auto";
  document.documentElement.dataset.theme = mode;
})();
