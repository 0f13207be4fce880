({ touch, minTouch }) => {
  const problems = [];
  const viewport = document.documentElement.clientWidth;
  const name = (e) => {
    const id = e.id ? '#' + e.id : '';
    const cls = typeof e.className === 'string' && e.className ? '.' + e.className.trim().split(/\s+/).join('.') : '';
    const text = (e.getAttribute('aria-label') || e.textContent || '').trim().slice(0, 40);
    return `${e.tagName.toLowerCase()}${id}${cls} "${text}"`;
  };
  const shown = (e) => {
    if (!e.getClientRects().length) return false;
    for (let n = e; n; n = n.parentElement) {
      const s = getComputedStyle(n);
      if (s.visibility === 'hidden' || s.display === 'none' || Number(s.opacity) === 0) return false;
    }
    return true;
  };
  // On screen: not off-canvas (a closed drawer lies left of the viewport, its shadow and
  // the last pixels of its rows aside).
  const drawerClosed = (e) => {
    const drawer = e.closest('.sidebar');
    return Boolean(drawer) && drawer.getBoundingClientRect().right <= 8;
  };
  const onScreen = (r) => r.right > 0 && r.left < viewport && r.bottom > 0 && r.top < innerHeight;
  if (document.documentElement.scrollWidth > viewport + 1)
    problems.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} > ${viewport}`);
  for (const e of document.body.querySelectorAll('*')) {
    if (!shown(e) || drawerClosed(e)) continue;
    const r = e.getBoundingClientRect();
    if (!onScreen(r)) continue;
    if (e.closest('pre, table, .table-wrap')) continue;  // they scroll on their own
    if (r.width > viewport + 1)
      problems.push(`wider than the viewport (${Math.round(r.width)} > ${viewport}): ${name(e)}`);
    else if (r.left < -1 || r.right > viewport + 1)
      problems.push(`cut by the screen's edge (${Math.round(r.left)}..${Math.round(r.right)} of ${viewport}): ${name(e)}`);
  }
  const controls = 'button, a[href], select, input:not([type=hidden]):not([type=file]), textarea, summary, [role=button], label[for]';
  for (const e of document.querySelectorAll(controls)) {
    if (!shown(e) || e.matches('.visually-hidden') || drawerClosed(e)) continue;
    const r = e.getBoundingClientRect();
    if (!onScreen(r)) continue;
    // A visually hidden radio stands behind its label, which is measured instead.
    if (e.matches('input[type=radio], input[type=checkbox]') && r.width <= 2) continue;
    const label = (e.getAttribute('aria-label') || e.textContent || '').trim();
    const full = e.getAttribute('title');
    const clipped = e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible';
    if (label && clipped && !(full && full.trim() === label) && !e.matches('textarea, input, select'))
      problems.push(`text clipped (${e.scrollWidth} > ${e.clientWidth}): ${name(e)}`);
    if (touch && !e.closest('.answer p, .answer li, .answer td, .notice p')) {
      if (r.height < minTouch - 0.5 || r.width < minTouch - 0.5)
        problems.push(`touch target ${Math.round(r.width)}x${Math.round(r.height)} < ${minTouch}: ${name(e)}`);
    }
  }
  return problems;
}
