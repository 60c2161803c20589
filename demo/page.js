() => {
  // The page's script. Screen readers hear each new answer: one polite live region, told a short summary whenever a
  // tab's main result changes (the results themselves are replaced wholesale, which assistive technology does not
  // announce); each accordion's button says whether it is open (aria-expanded); and a table a visitor opened in a
  // result (a <details>) stays open when the result is redrawn for another layer, head or text
  // (app.py passes this file to gr.Blocks(js=...): the file is one arrow function, nothing before it)
  const live = document.createElement('div');
  live.id = 'sr-live';
  live.setAttribute('role', 'status');
  live.setAttribute('aria-live', 'polite');
  live.style.cssText = 'position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%)';
  document.body.appendChild(live);
  const watched = {'#fm-filled': 'Completed sentence', '#st-label': 'Sentiment', '#st-whatif': 'What if?',
                   '#em-map-text': 'Word map', '#at-notes': 'Attention',
                   '#mk-stats': 'Masking statistics', '#tk-view .bpe-summary': 'Tokens',
                   '#tk-merges .bpe-summary': 'Merge by merge', '#em-neighbours h3': 'Nearest words',
                   '#em-analogy h3': 'Analogy', '#fm-compare .fm-compare-summary': 'Comparison'};
  const last = {'#fm-compare .fm-compare-summary': ''};  // a first comparison is news: there was none before
  const shown = id => {  // the result, if it is on the open tab
    const el = document.querySelector(id);
    return el && el.offsetParent !== null ? el : null;
  };
  const textOf = el => {  // the result's own text, without its component's label (read out before every answer)
    const label = el.querySelector('[data-testid="block-label"]');
    return el.innerText.replace(label ? label.innerText : '', '').replace(/\s+/g, ' ').trim().slice(0, 300);
  };
  // a tab's first look: what its results show when it opens is not news. Taken within a frame of the tab
  // opening (an answer asked for at once, and back before the page was still for a moment, is news)
  const firstLook = () => {
    for (const id of Object.keys(watched)) {
      const el = last[id] === undefined && shown(id);
      if (el) last[id] = textOf(el);
    }
  };
  const announce = () => {
    firstLook();
    for (const id of Object.keys(watched)) {
      const el = shown(id);
      const text = el && textOf(el);
      if (text && text !== last[id]) {
        last[id] = text;
        live.textContent = `${watched[id]}: ${text}`;
      }
    }
  };
  firstLook();
  let timer = null, frame = 0;
  new MutationObserver(() => {
    if (!frame && Object.keys(watched).some(id => last[id] === undefined)) {
      frame = requestAnimationFrame(() => { frame = 0; firstLook(); });
    }
    clearTimeout(timer);
    timer = setTimeout(announce, 400);
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
  // Gradio's accordions do not say whether they are open: their button gets aria-expanded, kept in step
  const expanded = () => {
    document.querySelectorAll('button.label-wrap').forEach(b => {
      const open = String(b.classList.contains('open'));
      if (b.getAttribute('aria-expanded') !== open) b.setAttribute('aria-expanded', open);
    });
    // gr.Label draws each class's bar as a button that does nothing here, and gr.Image wraps a static figure in
    // one: read (the image by its alt text), but no Tab stop (a figure's own fullscreen button keeps its stop)
    document.querySelectorAll('#st-label button:not([tabindex="-1"]), .static-figure button:has(img):not([tabindex="-1"])')
      .forEach(b => { b.tabIndex = -1; });
  };
  expanded();
  new MutationObserver(expanded).observe(document.body, {subtree: true, childList: true, attributes: true,
                                                        attributeFilter: ['class']});
  // opened <details>, named by the result they are in (its elem_id) and their summary's text; a visitor's
  // click says what they want (a redraw may reuse the element and drop its open attribute, or replace it)
  const opened = new Set();
  const name = d => `${d.closest('[id]')?.id}|${d.querySelector('summary')?.textContent.trim()}`;
  document.addEventListener('click', e => {
    const summary = e.target.closest?.('summary');
    const d = summary?.parentElement;
    if (d instanceof HTMLDetailsElement) d.open ? opened.delete(name(d)) : opened.add(name(d));  // before it toggles
  }, true);
  new MutationObserver(() => {  // before the redrawn result is painted: no flash of a closed table
    if (opened.size) document.querySelectorAll('details:not([open])').forEach(d => {
      if (opened.has(name(d))) d.open = true;
    });
  }).observe(document.body, {subtree: true, childList: true, attributes: true, attributeFilter: ['open']});
  // the head view's rows (demo/head_view.py) are one Tab stop: the arrow keys, Home and End move the focus
  // from token to token and the stop with it; a tapped or clicked row becomes the stop
  const rowMoves = {ArrowDown: 1, ArrowRight: 1, ArrowUp: -1, ArrowLeft: -1, Home: -Infinity, End: Infinity};
  document.addEventListener('keydown', e => {
    const row = e.target.closest?.('.hv-r');
    if (!row || !(e.key in rowMoves)) return;
    const rows = [...row.closest('svg').querySelectorAll('.hv-r')];
    const to = rows[Math.max(0, Math.min(rows.length - 1, rows.indexOf(row) + rowMoves[e.key]))];
    e.preventDefault();  // no page scroll
    to.focus();
  });
  document.addEventListener('focusin', e => {
    const row = e.target.closest?.('.hv-r');
    if (row) row.closest('svg').querySelectorAll('.hv-r').forEach(r => { r.tabIndex = r === row ? 0 : -1; });
  });
}
