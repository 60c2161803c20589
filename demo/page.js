() => {
  // The page's script. Screen readers hear each new answer: one polite live region, told a short summary whenever a
  // tab's main result changes (the results themselves are replaced wholesale, which assistive technology does not
  // announce); each accordion's button says whether it is open (aria-expanded); an input error is tied to its field
  // (aria-invalid, aria-describedby); a box that scrolls sideways takes the focus; and a table a visitor opened in a
  // result (a <details>) stays open when the result is redrawn for another layer, head or text; a dropdown's list
  // closes when the focus leaves its box, and is no Tab stop, and the box keeps the focus after a choice made with
  // keys; Gradio's bars, figures, dropdown arrows and example tables are not heard as buttons or unnamed images and
  // grids; a gr.Label's percentages read as the text beside them writes them; a tab list is one Tab stop that the
  // arrow keys move (ARIA's tabs pattern); a popup warning closes when the next run starts
  // (app.py passes this file to gr.Blocks(js=...): the file is one arrow function, nothing before it)
  const live = document.createElement('div');
  live.id = 'sr-live';
  live.setAttribute('role', 'status');
  live.setAttribute('aria-live', 'polite');
  live.style.cssText = 'position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%)';
  document.body.appendChild(live);
  // What a screen reader hears of each result: a summary written for the ear (its heading, its summary line, the
  // answer), never the result's whole text (a table read cell by cell, a chip's "<mask> 1"), 200 characters at most
  const said = e => (e ? e.textContent : '').replace(/\s+/g, ' ').trim();
  const first = e => said(e && (e.firstChild || e));  // a cell's own text, not its hidden "exact" one
  const cells = (row, tag = 'td, th') => [...row.querySelectorAll(tag)].map(said);
  // A probability as every text of the page writes it (demo/formatting.py's format_probability, mirrored): three
  // significant digits, trailing zeros kept ("93.0%"), "100%" for what rounds to it, under 0.001% a power of ten
  const threeDigits = x => {  // x.toPrecision(3) rounded as Python rounds: an exact tie (3.125) to even, not up
    // all of x's decimals: from 0.001 to 100 a double has at most 62 (and no tie is exact under 0.001)
    const exact = x.toFixed(100).replace(/0+$/, '');
    const tie = /^\d\d[02468]5$/.test(exact.replace(/^[0.]+/, '').replace('.', ''));
    return (tie ? Number(exact.slice(0, -1)) : x).toPrecision(3);
  };
  const superscript = text => text.replace(/[-\d]/g, c => '⁻⁰¹²³⁴⁵⁶⁷⁸⁹'['-0123456789'.indexOf(c)]);
  const probability = p => {
    if (p <= 0) return '0%';
    const percent = p * 100, shown = threeDigits(percent);
    if (Number(shown) >= 100) return '100%';
    if (Number(shown) >= 1e-3) return `${shown}%`;
    const [mantissa, exponent] = percent.toExponential(2).split('e');
    return `${mantissa} × 10${superscript(String(Number(exponent)))}%`;
  };
  const named = (name, text) => text ? `${name}: ${text}` : '';  // nothing while the result is empty
  const figure = e => {  // the visible attention view, by its figure's name (a plot's alt: "“title”: plot ...")
    const shown = [...e.querySelectorAll('svg[aria-label], img[alt]')].find(f => f.getBoundingClientRect().width);
    return shown ? (shown.getAttribute('aria-label') || shown.alt.replace(/:? plot visualising provided data$/, '')
      .replace(/^“(.*)”$/, '$1')) : '';
  };
  const watched = {
    '#fm-filled': e => named('Completed sentence', [...e.querySelectorAll('.text')].map(t => t.textContent).join('')),
    '#fm-view': e => [...e.querySelectorAll('.fm-mask')].map(m => {  // top-k and the top answer, per mask
      const top = m.querySelector('tbody tr');
      return `${said(m.querySelector('h2, h3'))}: ${first(top?.querySelector('th'))}, ${first(top?.querySelector('.fm-score'))}`;
    }).join('; '),
    '#st-label': e => {
      const answer = said(e.querySelector('[data-testid="label-output-value"]'));
      const meter = [...e.querySelectorAll('meter')].find(m => m.getAttribute('aria-label') === answer);
      // by the box's own name: "Sentiment", or "Answer" for a classifier whose labels name no sentiment (a topic
      // classifier's "sports"; demo/explain.py's answer_label)
      const name = said(e.querySelector('[data-testid="block-label"]')) || 'Answer';
      return named(name, answer && `${answer}${meter ? ` (${probability(meter.value)})` : ''}`);
    },
    '#st-whatif': e => {  // its first line, then each edit's answer
      const head = cells(e.querySelector('thead tr') || e, 'th'), at = head.indexOf('answer');
      const rows = at > 0 ? [...e.querySelectorAll('tbody tr')].slice(1).map(r => cells(r, 'td')) : [];
      return [said(e.querySelector('p')), rows.map(c => `${c[0]}: ${c[at]}`).join('; ')].join(' ').trim();
    },
    '#at-notes': e => named('Attention', said(e.querySelector('p')).split('. ')[0]),  // its first sentence
    '#at-views': e => named('Attention view', figure(e)),  // a layer or head chosen redraws it
    '#tk-view .bpe-summary': e => named('Tokens', said(e)),
    '#tk-merges .bpe-view': e => named('Merge by merge', [said(e.querySelector('.bpe-summary'))
      .replace(/, merge by merge$/, ''), said(e.querySelector('.bpe-done'))].filter(Boolean).join(': ')),
    '#em-neighbours .ev-view': e => {  // its heading, how many, the first three with their similarity
      const rows = [...e.querySelectorAll('tr')].filter(r => r.querySelector('th.ev-word'));
      const top = rows.slice(0, 3).map(r => `${said(r.querySelector('th'))} ${said(r.querySelector('.ev-score'))}`);
      return named('Nearest words', `${said(e.querySelector('h3'))}${rows.length ? ` (${rows.length} words): ` +
        `${top.join(', ')}${rows.length > 3 ? ', …' : ''}` : ''}`);
    },
    '#em-analogy h3': e => named('Analogy', said(e)),
    '#em-map-text': e => named('Word map', said(e.querySelector('summary'))),
    '#mk-stats': e => {  // each scheme and how many positions it made targets
      const rows = [...e.querySelectorAll('tbody tr')].map(r => cells(r, 'td'));
      return named('Masking, positions ever a target', rows.map(c => `${c[0]} ${c[2]}`).join('; '));
    },
    '#fm-compare .fm-compare-summary': e => named('Comparison', said(e)),
  };
  const summary = (id, el) => {  // "␣" (a token's leading space) said as the Tokens tab's chips say it
    const text = (watched[id](el) || '').replace(/␣(?=\S)/g, 'space + ').replace(/␣/g, 'space')
      .replace(/\s+/g, ' ').trim();
    return text.length > 200 ? `${text.slice(0, Math.max(text.lastIndexOf(' ', 199), 150))}…` : text;
  };
  // what each result said last; a result the page never opens with (What if?, a comparison): its first answer is
  // news, there was none before
  const last = {'#st-whatif': '', '#fm-compare .fm-compare-summary': ''};
  const shown = id => {  // the result, if it is on the open tab
    const el = document.querySelector(id);
    return el && el.offsetParent !== null ? el : null;
  };
  // a tab's first look: what its results show when it opens is not news (its default view, laid out at start-up),
  // nor is the answer to a view the page computes as it opens (only one that warned at start-up: show_at_start in
  // demo/wiring.py), whenever it comes (on the first tab, after its first look). Taken within a frame of the tab
  // opening (an answer asked for at once, and back before the page was still for a moment, is news)
  const firstLook = () => {
    for (const id of Object.keys(watched)) {
      const el = last[id] === undefined && shown(id);
      const text = el && summary(id, el);
      if (text) last[id] = text;
    }
  };
  let looks = 0;  // how many times it has looked (data-looked): a test knows that a quiet page was looked at
  const announce = () => {
    live.dataset.looked = String(++looks);
    firstLook();
    const news = [];
    for (const id of Object.keys(watched)) {
      const el = shown(id);
      const text = el && last[id] !== undefined && summary(id, el);
      if (text && text !== last[id]) {
        last[id] = text;
        news.push(text);
      }
    }
    if (news.length) live.textContent = news.map(t => /[.!?…:]$/.test(t) ? t : `${t}.`).join(' ');
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
  };
  // Gradio's markup where a screen reader heard it wrongly. gr.Label draws each class's bar as a button that does
  // nothing here, and gr.Image wraps a static figure in one, which was heard as a button named by the figure's alt
  // text, then the image with the same alt: no Tab stop, and a group (its meter keeps its name and value) or a
  // figure (the image read once, by its alt) instead of a button; a figure's own fullscreen button stays one. A
  // dropdown's arrow is decoration, not an unnamed image; an Examples table is named by its block's label and its
  // columns (the inputs an example fills), not an unnamed grid. A dropdown's open list is no Tab stop: Chromium made
  // one that scrolls a stop, Gradio closed it as its box lost the focus, and the focus fell to the page's <body>
  const setAttr = (e, name, value) => { if (e.getAttribute(name) !== value) e.setAttribute(name, value); };
  const settled = new WeakSet();  // dropdowns that took a choice and kept the focus (patchGradio, `reopen`)
  let byKeys = false;  // whether the visitor's last act was a key (not a click or a tap)
  document.addEventListener('keydown', e => { if (e.isTrusted) byKeys = true; }, true);
  document.addEventListener('pointerdown', e => { if (e.isTrusted) byKeys = false; }, true);
  const patchGradio = () => {
    const roles = [['#st-label button.confidence-set', 'group'], ['.static-figure button:has(img)', 'figure']];
    roles.forEach(([selector, role]) => document.querySelectorAll(selector).forEach(b => {
      setAttr(b, 'tabindex', '-1');
      setAttr(b, 'role', role);
    }));
    document.querySelectorAll('svg.dropdown-arrow').forEach(s => setAttr(s, 'aria-hidden', 'true'));
    document.querySelectorAll('ul[role="listbox"]').forEach(l => setAttr(l, 'tabindex', '-1'));
    // a dropdown's choice made with the keyboard (Enter on an option, a typed model and Enter) ends with Gradio
    // blurring the box: the focus fell to the page's <body>, and the next Tab started from the page's top. The box
    // is told it was left (Gradio's blur handler takes the choice, closes the list and sends the event) and keeps
    // the focus, settled until the next key, click or text in it (`reopen`). A tapped or clicked option still
    // blurs it: a phone would keep its keyboard up over the page for a box that kept the focus
    document.querySelectorAll('input[role="combobox"]').forEach(box => {
      if (Object.hasOwn(box, 'blur')) return;
      box.blur = () => {
        if (!byKeys) return HTMLElement.prototype.blur.call(box);
        settled.add(box);
        box.dispatchEvent(new FocusEvent('blur'));
      };
    });
    document.querySelectorAll('.block > .table-wrap > table[role="grid"]').forEach(t => {
      const label = said(t.closest('.block').querySelector(':scope > .label')) || 'Examples';
      setAttr(t, 'aria-label', `${label}: ${cells(t.querySelector('thead tr') || t, 'th').join(', ')}`);
    });
  };
  // gr.Label writes each confidence rounded to a whole percent ("80%"), next to an explanation and a What if? that
  // write the same probability "80.1%": each row, and its meter's value for a screen reader, is written as they
  // write it, from the meter's exact value. Rewritten whenever Gradio redraws a row: a new row, its text rewritten,
  // or only its meter's value changed (Gradio keeps a text whose whole percent did not change; the text node is
  // Gradio's own, its content changed in place, so that Gradio's next answer goes on writing to it)
  const exactPercents = () => document.querySelectorAll('.confidence-set').forEach(row => {
    const meter = row.querySelector('meter'), text = row.querySelector('.confidence')?.firstChild;
    if (!meter || text?.nodeType !== Node.TEXT_NODE) return;
    const shown = probability(meter.value);
    if (text.nodeValue !== shown) text.nodeValue = shown;
    setAttr(meter, 'aria-valuenow', String(meter.value * 100));
    setAttr(meter, 'aria-valuetext', shown);
  });
  exactPercents();
  new MutationObserver(exactPercents).observe(document.body, {subtree: true, childList: true, characterData: true,
                                                             attributes: true, attributeFilter: ['value']});
  // An input error is tied to its field while it shows: the field is invalid (aria-invalid) and described by the
  // message (aria-describedby), so that a screen reader that comes back to it hears why; both go with the message.
  // Its field: the one of its tab the message names by its label ("Word c", "Head", "Seed") or the label's first word
  // ("3 candidate words"), else the nearest field before the message's box in its column; a model box's refusal's,
  // that box
  const labelOf = f => said(f.closest('.block')?.querySelector('[data-testid="block-info"]')).toLowerCase();
  const names = (text, label) => {  // the label as words of the text ("word c", not "word and")
    const literal = label.replace(/[.*+?^$()|[\]{}\\]/g, '\\$&');
    return new RegExp(`(^|\\W)${literal}(?!\\w)`).test(text);
  };
  const fieldsIn = root => [...root.querySelectorAll('textarea, input:not([type=range]):not([type=checkbox])')]
    .filter(f => f.type !== 'hidden' && !f.closest('[id$="-model"]') && labelOf(f));
  const fieldOf = message => {
    const status = message.closest('[id$="-model-status"]');
    if (status) return document.querySelector(`#${status.id.replace(/-status$/, '')} input`);
    const box = message.closest('.input-error-box, #fm-compare-error') && message.closest('.block');
    if (!box) return null;  // a message that is a result itself (Tokens' merge by merge)
    const text = said(message).toLowerCase(), near = fieldsIn(box.parentElement);
    const tab = fieldsIn(box.closest('.tabitem') || box.parentElement);
    return tab.filter(f => names(text, labelOf(f))).sort((a, b) => labelOf(b).length - labelOf(a).length)[0]
      || tab.find(f => names(text, labelOf(f).split(' ')[0]))
      || near.filter(f => box.compareDocumentPosition(f) & Node.DOCUMENT_POSITION_PRECEDING).pop() || near[0];
  };
  let linked = new Map(), errors = 0;
  const describedBy = f => (f.getAttribute('aria-describedby') || '').split(' ').filter(Boolean);
  const linkErrors = () => {
    const now = new Map();
    document.querySelectorAll('.input-error').forEach(message => {
      const field = fieldOf(message);
      if (!field) return;
      if (!message.id) message.id = `input-error-${++errors}`;
      now.set(field, message.id);
    });
    linked.forEach((id, field) => {  // a message gone, or replaced
      if (now.get(field) === id) return;
      const rest = describedBy(field).filter(t => t !== id);
      if (rest.length) field.setAttribute('aria-describedby', rest.join(' '));
      else field.removeAttribute('aria-describedby');
      field.removeAttribute('aria-invalid');
    });
    now.forEach((id, field) => {
      if (field.getAttribute('aria-invalid') !== 'true') field.setAttribute('aria-invalid', 'true');
      if (!describedBy(field).includes(id)) field.setAttribute('aria-describedby', [...describedBy(field), id].join(' '));
    });
    linked = now;
  };
  // A box that scrolls sideways (a wide Markdown table, every head of a layer or layer by layer on a phone) takes
  // the focus, so that the keyboard can scroll it (Chromium makes such a box focusable by itself, Safari does not),
  // with a name: a table's heading above it and its first column's, the table keeping its own role (a region's would
  // hide its rows and cells from a screen reader); another box's, its data-name; a box that fits has none of it
  const tableName = table => {
    let e = table.previousElementSibling;
    while (e && !/^H[1-6]$/.test(e.tagName)) e = e.previousElementSibling;
    const column = said(table.querySelector('th'));
    return `${e ? `${said(e)}: the` : 'The'} table${column ? ` “${column}”` : ''}`;
  };
  const scrolling = '.md table:not(.fm-table):not(.mk-table), #at-grid .matplotlib, .ll-scroll';
  const scrollers = () => {
    document.querySelectorAll(scrolling).forEach(box => {
      if (box.offsetParent === null) return;  // out of sight: measured once it shows
      const scrolls = box.scrollWidth > box.clientWidth + 1;
      if (scrolls === box.hasAttribute('data-scrolls')) return;
      if (!scrolls) return ['data-scrolls', 'tabindex', 'role', 'aria-label'].forEach(a => box.removeAttribute(a));
      const table = box.tagName === 'TABLE';
      box.setAttribute('data-scrolls', '');
      box.tabIndex = 0;
      if (!table) box.setAttribute('role', 'region');
      const boxName = table ? tableName(box) : box.dataset.name || 'All heads of the layer';
      box.setAttribute('aria-label', `${boxName} (scrolls sideways)`);
    });
  };
  let measure = 0;  // once a frame at most: measuring lays the page out
  const remeasure = () => { if (!measure) measure = requestAnimationFrame(() => { measure = 0; scrollers(); }); };
  // Gradio's tab lists (the tabs, Attention's views), as ARIA's tabs pattern has them: the open tab is the list's
  // one Tab stop (Gradio made every tab one), kept in step with Gradio's choice however it redraws the list
  const tabsOf = list => [...list.querySelectorAll(':scope > [role="tab"]')];
  const tabStops = () => document.querySelectorAll('[role="tablist"]').forEach(list => {
    const tabs = tabsOf(list), open = tabs.find(t => t.getAttribute('aria-selected') === 'true') || tabs[0];
    tabs.forEach(t => setAttr(t, 'tabindex', t === open ? '0' : '-1'));
  });
  // Left and Right (round from end to end), Home and End move the focus to another tab and open it
  const tabMoves = {ArrowRight: 1, ArrowLeft: -1, Home: -Infinity, End: Infinity};
  document.addEventListener('keydown', e => {
    const tab = e.target.closest?.('[role="tablist"] > [role="tab"]');
    if (!tab || !(e.key in tabMoves) || e.altKey || e.ctrlKey || e.metaKey) return;  // Alt+Left: the browser's back
    const tabs = tabsOf(tab.parentElement)  // those shown and enabled
      .filter(t => t.getClientRects().length && t.getAttribute('aria-disabled') !== 'true');
    const move = tabMoves[e.key], at = tabs.indexOf(tab);
    const to = tabs[Number.isFinite(move) ? (at + move + tabs.length) % tabs.length : move < 0 ? 0 : tabs.length - 1];
    e.preventDefault();  // no page scroll
    to.focus();
    to.click();
  });
  // A link to a tab ("#tokens", the tab's id: the header's "Start here" line, whose order is not the tabs') opens it
  document.addEventListener('click', e => {
    const link = e.target.closest?.('a[href^="#"]');
    const tab = link && document.querySelector(`[role="tab"][data-tab-id="${CSS.escape(link.hash.slice(1))}"]`);
    if (!tab) return;
    e.preventDefault();
    tab.click();
    tab.focus();
  });
  // A popup warning is about the run that said it, and Gradio keeps it up to 10 s: beside the next run's results it
  // spoke of another text. Once the visitor has acted again (a click, a key) and a run starts (Gradio marks its
  // outputs pending), the popups shown before that act are closed; a warning the new run says again shows anew
  const shownAt = new WeakMap();  // a popup's message -> when it showed (Infinity: its popup was closed)
  let actedAt = -Infinity;
  for (const type of ['pointerdown', 'keydown']) document.addEventListener(type, e => {
    if (e.isTrusted && !e.target.closest?.('.toast-wrap')) actedAt = performance.now();
  }, true);
  const closeOld = () => {
    const running = document.querySelector('.pending');
    document.querySelectorAll('.toast-body').forEach(box => {  // one box a kind: the warnings together
      const messages = [...box.querySelectorAll('.toast-message-item')];
      messages.forEach(m => { if (!shownAt.has(m)) shownAt.set(m, performance.now()); });
      if (!running || !messages.some(m => shownAt.get(m) < actedAt)) return;
      messages.forEach(m => shownAt.set(m, Infinity));  // closed once: it fades out for a moment
      box.querySelector('[data-testid=toast-close]')?.click();
    });
  };
  const changed = () => { expanded(); patchGradio(); tabStops(); linkErrors(); closeOld(); remeasure(); };
  changed();
  new MutationObserver(changed).observe(document.body, {subtree: true, childList: true, attributes: true,
                                                       attributeFilter: ['class', 'aria-selected']});
  window.addEventListener('resize', remeasure);
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
  // Gradio's slider brings a number typed in its box into its range only when the box loses the focus: after Enter,
  // the box said 50 where the slider, and the value a click on the tab's button sent, were 20. Enter does it there
  // and then, as leaving the box would (the focus stays in the box)
  document.addEventListener('keydown', e => {
    const box = e.target;
    if (e.key !== 'Enter' || !(box instanceof HTMLInputElement) || box.type !== 'number'
        || !box.closest('.block')?.querySelector('input[type=range]')) return;
    const value = box.valueAsNumber;
    if (value < Number(box.min) || value > Number(box.max)) { box.blur(); box.focus(); }
  });
  // Gradio 6.31's dropdowns open their list on focus, and on any key (Tab too, once the key's handling is over):
  // the lists of the boxes passed piled up over the next controls, the focused one included. The list of a box the
  // focus leaves for another part of the page is closed as Escape closes it, open or about to open (a click on an
  // option keeps the focus in the box's block)
  document.addEventListener('focusout', e => {
    const block = e.target.closest?.('.block');
    if (!block || !e.relatedTarget || block.contains(e.relatedTarget) || e.target.getAttribute('role') !== 'combobox') {
      return;
    }
    e.target.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape', bubbles: true}));
  });
  // A dropdown that keeps the focus after a choice (patchGradio) starts anew on the next key, click or text put in it
  // (a paste, an autofill), as focusing it does: Gradio's focus handler opens the list at the option chosen and
  // readies the box for typing (without it, Down after choosing layer 5 went to layer 1, and a model's name typed
  // next was not taken)
  const STAY = new Set(['Tab', 'Escape', 'Enter', 'Shift', 'Control', 'Alt', 'Meta']);  // keys that open nothing
  const reopen = e => {
    const box = e.target;
    if (STAY.has(e.key) || !settled.delete(box)) return;  // (Gradio may have opened the list on a Control already)
    box.dispatchEvent(new FocusEvent('focus'));
  };
  document.addEventListener('keydown', reopen, true);
  document.addEventListener('pointerdown', reopen, true);
  document.addEventListener('beforeinput', reopen, true);
  // ... and when the focus leaves a settled box, Gradio's blur handler does not run again: it sent the box's event a
  // second time, late, its progress covering the results under the visitor's next click (a table's summary, which
  // the click then missed)
  document.addEventListener('blur', e => {
    if (!e.isTrusted || !settled.delete(e.target)) return;
    e.stopImmediatePropagation();
  }, true);
}
