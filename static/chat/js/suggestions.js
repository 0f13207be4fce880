// Prompt suggestions on an empty chat (templates/chat/suggestions.html): a click puts the
// prompt in the composer, in the mode it needs, for the user to read, change and send; the
// image and document ones open the file chooser too, since they need a file.
// The composer is driven through its elements, as a user would, so that its own listeners
// (the Send button's state, the conversation's mode) follow.

function choose(button) {
  const prompt = document.getElementById("prompt");
  const mode = button.dataset.mode;
  if (mode) {
    const radio = document.getElementById(mode === "dag" ? "mode-dag" : "mode-react");
    if (radio && !radio.checked) {
      radio.checked = true;
      radio.dispatchEvent(new Event("change", { bubbles: true }));
    }
  }
  prompt.value = button.dataset.prompt || "";
  prompt.dispatchEvent(new Event("input", { bubbles: true }));
  prompt.focus();
  prompt.setSelectionRange(prompt.value.length, prompt.value.length);
  if (button.dataset.attach) document.getElementById("attach")?.click();
}

for (const button of document.querySelectorAll(".suggestion")) {
  button.addEventListener("click", () => choose(button));
}
