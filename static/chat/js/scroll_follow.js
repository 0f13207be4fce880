// The message list follows new content to the bottom while the reader is there, and a
// "↓ Newest" button brings them back once they scrolled up.

export class ScrollFollower {
  constructor(box) {
    this.box = box;
    this.following = true;
  }

  // The view follows new content to the bottom while the reader is there (``following``);
  // once they scroll up it stays where they are until they come back or press ↓. Whether
  // they are "there" is decided by their own scrolling, not measured after new content
  // arrived (a long answer landing at once would otherwise look like scrolling away).
  scrollToEnd(force) {
    if (force) this.following = true;
    if (this.following) this.pinToEnd();
    this.updateJumpButton();
  }

  pinToEnd() {
    const box = this.box;
    box.scrollTo({ top: box.scrollHeight, behavior: "instant" });
  }

  nearEnd() {
    const box = this.box;
    return box.scrollHeight - box.scrollTop - box.clientHeight < 48;
  }

  start(onJump) {
    this.following = true;
    this.jumpButton = document.getElementById("jump-to-end");
    this.jumpButton.addEventListener("click", () => {
      this.scrollToEnd(true);
      onJump();
    });
    this.box.addEventListener(
      "scroll",
      () => {
        // Pins land at the bottom (content that grows meanwhile is pinned again by the
        // observer before this runs), so only the reader's own scrolling leaves it.
        this.following = this.nearEnd();
        this.updateJumpButton();
      },
      { passive: true },
    );
    // Content that grows later (rendered HTML replacing streamed text, images loading, a
    // usage card) keeps a following view at the bottom too.
    const keepPinned = () => {
      if (this.following && !this.nearEnd()) this.pinToEnd();
      this.updateJumpButton();
    };
    new MutationObserver(keepPinned).observe(this.box, {
      childList: true,
      subtree: true,
      characterData: true,
    });
    this.box.addEventListener("load", keepPinned, true);
  }

  updateJumpButton() {
    if (this.jumpButton) this.jumpButton.hidden = this.following || this.nearEnd();
  }
}
