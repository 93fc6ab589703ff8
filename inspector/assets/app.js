// MangleCP Inspector: the page. It renders what the inspector's JSON API
// shapes (see package inspector). Everything a server sends is drawn as
// text (textContent), never as HTML: the inspected server need not be
// trusted.
'use strict';

(function () {
  const token = new URLSearchParams(location.hash.replace(/^#/, '')).get('token') || '';

  const st = {
    session: null,      // SessionView
    facts: [],          // [{fact, on}]
    evaluation: null,   // EvaluateView of the last evaluation
    card: null,         // ToolCard being invoked
    lastInvoke: null,   // InvokeView of the last invocation
  };

  // ---------------------------------------------------------------- helpers

  const $ = (id) => document.getElementById(id);

  // h builds an element: h('div', {class: 'x', onclick: fn}, 'text', child).
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k === 'text') el.textContent = v;
      else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else if (k === 'dataset') Object.assign(el.dataset, v);
      else if (k === 'style') Object.assign(el.style, v); // CSSOM: allowed by the CSP, unlike style attributes
      else if (v === true) el.setAttribute(k, '');
      else el.setAttribute(k, String(v));
    }
    for (const kid of kids.flat(Infinity)) {
      if (kid === undefined || kid === null || kid === false) continue;
      el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return el;
  }

  // scrollTo brings el into view, smoothly unless the user (or a test)
  // prefers reduced motion.
  function scrollTo(el, block) {
    const reduce = window.matchMedia('(prefers-reduced-motion: reduce)').matches;
    el.scrollIntoView({ behavior: reduce ? 'auto' : 'smooth', block });
  }

  function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }
  function pill(text, kind) { return h('span', { class: 'pill' + (kind ? ' ' + kind : '') }, text); }
  function pretty(v) { return JSON.stringify(v, null, 2); }
  function show(id, on) { $(id).hidden = !on; }

  // fmtValue writes one argument value as the fact text does.
  function fmtValue(v) {
    if (v === null || v === undefined) return '_';
    if (typeof v === 'object' && v._type === 'int64') return String(v.value);
    return JSON.stringify(v);
  }

  function fmtTemporal(t) {
    if (!t) return '';
    if (t.at !== undefined) return ' @ ' + fmtValue(t.at);
    return ' @ [' + fmtValue(t.start) + ', ' + fmtValue(t.end) + ']';
  }

  function factText(f) {
    let args;
    if (Array.isArray(f.args)) args = f.args.map(fmtValue).join(', ');
    else if (f.named_args) args = Object.entries(f.named_args).map(([k, v]) => k + ': ' + fmtValue(v)).join(', ');
    else args = '';
    return f.pred + '(' + args + ')';
  }

  function banner(msg) {
    const b = $('banner');
    b.textContent = msg;
    b.hidden = !msg;
  }

  // api calls the inspector's JSON API with the session token.
  async function api(method, path, body) {
    const opts = { method, headers: { 'X-Inspector-Token': token } };
    if (body !== undefined) {
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, opts);
    } catch (e) {
      throw new Error('the inspector did not answer: is manglecp inspect still running?');
    }
    const text = await res.text();
    let data;
    try { data = JSON.parse(text); } catch (e) { data = { error: text }; }
    if (!res.ok) throw new Error(data.error || ('HTTP ' + res.status));
    return data;
  }

  async function run(fn) {
    try {
      await fn();
    } catch (e) {
      banner(String(e.message || e));
    } finally {
      refreshHistory();
    }
  }

  // ------------------------------------------------------------- manifest

  function renderSession() {
    const s = st.session;
    const m = s.manifest || {};
    const statusKind = { ready: 'ok', booting: 'warn', draining: 'warn', degraded: 'bad' }[m.status] || '';
    const line = clear($('server-line'));
    line.append(
      h('span', { class: 'name' }, (m.server_name || '?') + ' ' + (m.server_version || '')),
      pill(m.status || 'unknown', statusKind),
      pill('domain ' + ((m.domain || {}).id || '?'), 'dark'),
      pill((s.transport || '') + (s.target ? ' · ' + s.target : ' · in-process'), 'dark'),
      pill('MangleCP ' + ((m.protocol || {}).manglecp || '?') + ' · level ' + ((m.protocol || {}).conformance_level ?? '?'), 'dark'),
    );

    const body = clear($('manifest-body'));
    const d = m.domain || {};
    if (d.description) body.append(h('p', { class: 'hint' }, d.description));

    body.append(h('h3', {}, 'Intents'));
    const ul = h('ul', { class: 'intents', id: 'intent-list' });
    for (const it of m.intents || []) {
      ul.append(h('li', { dataset: { intent: it.name }, onclick: () => pickIntent(it.name), title: 'Evaluate this intent' },
        h('div', {}, h('span', { class: 'iname' }, it.name)),
        it.description ? h('div', { class: 'hint' }, it.description) : null,
        h('div', { class: 'chips' },
          (it.required_facts || []).map((p) => h('span', { class: 'chip req', title: 'required' }, p)),
          (it.optional_facts || []).map((p) => h('span', { class: 'chip', title: 'optional' }, p)))));
    }
    body.append(ul);

    body.append(h('h3', {}, 'Facts profile'));
    const tb = h('tbody');
    for (const p of s.predicates || []) {
      tb.append(h('tr', {},
        h('td', { class: 'sig' }, p.predicate, '(',
          p.args.map((a, i) => [i ? ', ' : '', a.name, h('span', { class: 'argtype' }, ' ' + a.type)]), ')'),
        h('td', {}, p.temporal ? pill('temporal', 'warn') : null, ' ', pill(p.direction, p.input ? '' : 'server'))));
    }
    body.append(h('table', { class: 'table profile' }, tb));
    const tf = (m.facts_profile || {}).time_formats || [];
    if (tf.length) body.append(h('div', { class: 'hint' }, 'Times: ' + tf.join(', ')));

    const l = m.limits || {};
    const a = m.auth || {};
    const caps = m.capabilities || {};
    body.append(h('h3', {}, 'Limits, auth and capabilities'));
    const kv = h('dl', { class: 'kv' });
    const add = (k, v) => kv.append(h('dt', {}, k), h('dd', {}, v));
    add('message', fmtNum(l.max_message_bytes) + ' bytes');
    add('facts / request', fmtNum(l.max_facts_per_request));
    add('derived facts', fmtNum(l.max_derived_facts));
    if (l.max_intervals_per_atom) add('intervals / atom', fmtNum(l.max_intervals_per_atom));
    if (l.max_compute_ms) add('compute', fmtNum(l.max_compute_ms) + ' ms');
    add('auth', a.required ? h('span', {}, pill('required', 'warn'), ' ', (a.schemes || []).join(', ')) : pill('not required', 'ok'));
    if (s.authentication && s.authentication.identity) add('identity', s.authentication.identity);
    add('confirmation', s.confirmation_key ? 'the inspector can sign confirmation tokens' : 'paste a confirmation token when asked');
    const on = Object.entries(caps).filter(([, v]) => v === true).map(([k]) => k);
    add('capabilities', h('span', { class: 'chips' }, on.map((c) => h('span', { class: 'chip' }, c))));
    body.append(kv);

    // Forms driven by the manifest.
    const sel = clear($('fact-pred'));
    for (const p of s.predicates || []) {
      sel.append(h('option', { value: p.predicate, disabled: !p.input }, p.predicate + (p.input ? '' : ' (output only)')));
    }
    const first = (s.predicates || []).find((p) => p.input);
    if (first) sel.value = first.predicate;
    renderFactForm();

    const isel = clear($('eval-intent'));
    for (const it of m.intents || []) isel.append(h('option', { value: it.name }, it.name));
    renderIntentInfo();
  }

  function fmtNum(n) { return n === undefined || n === null ? '–' : Number(n).toLocaleString('en-US'); }

  function predicate(name) { return (st.session.predicates || []).find((p) => p.predicate === name); }

  function pickIntent(name) {
    $('eval-intent').value = name;
    renderIntentInfo();
    scrollTo($('evaluate'), 'start');
  }

  function renderIntentInfo() {
    const name = $('eval-intent').value;
    const it = ((st.session.manifest || {}).intents || []).find((i) => i.name === name);
    const box = clear($('eval-intent-info'));
    if (!it) return;
    const have = new Set(st.facts.filter((f) => f.on).map((f) => f.fact.pred));
    const missing = (it.required_facts || []).filter((p) => !have.has(p));
    box.append(it.description || '');
    if (missing.length) {
      box.append(' Missing required facts: ');
      missing.forEach((p, i) => box.append(i ? ', ' : '', h('button', { class: 'link', onclick: () => selectPredicate(p) }, p)));
    }
  }

  function selectPredicate(name) {
    $('fact-pred').value = name;
    renderFactForm();
    scrollTo($('facts'), 'start');
    const firstInput = $('fact-args').querySelector('input, select');
    if (firstInput) firstInput.focus();
  }

  // ----------------------------------------------------------- facts editor

  function renderFactForm() {
    const p = predicate($('fact-pred').value);
    const box = clear($('fact-args'));
    const info = clear($('fact-pred-info'));
    $('fact-error').textContent = '';
    if (!p) return;
    info.append(p.description || '');
    if (p.required_by && p.required_by.length) info.append(' Required by ' + p.required_by.join(', ') + '.');
    p.args.forEach((a, i) => {
      const id = 'fact-arg-' + i;
      let input;
      if (a.type === 'boolean') {
        input = h('select', { id, dataset: { type: a.type, name: a.name } }, h('option', { value: 'true' }, 'true'), h('option', { value: 'false' }, 'false'));
      } else {
        input = h('input', {
          id, dataset: { type: a.type, name: a.name }, spellcheck: 'false',
          inputmode: a.type === 'number' ? 'decimal' : null,
          placeholder: a.type === 'number' ? 'a number' : a.type === 'any' ? 'JSON value or text' : 'text',
        });
      }
      box.append(h('label', { for: id }, a.name, h('span', { class: 'type' }, a.type)), input);
    });
    show('fact-temporal', p.temporal);
    if (!p.temporal) $('fact-t-kind').value = '';
    renderTemporalRows();
  }

  function renderTemporalRows() {
    const k = $('fact-t-kind').value;
    show('fact-t-at-row', k === 'at');
    show('fact-t-start-row', k === 'interval');
    show('fact-t-end-row', k === 'interval');
  }

  // parseArg turns an input's text into the JSON value of its type.
  function parseArg(text, type, name) {
    const s = text.trim();
    switch (type) {
      case 'string':
        return text;
      case 'boolean':
        return s === 'true';
      case 'number': {
        if (s === '') throw new Error(name + ': enter a number');
        if (/^-?\d+$/.test(s) && !Number.isSafeInteger(Number(s))) return { _type: 'int64', value: s };
        const n = Number(s);
        if (!Number.isFinite(n)) throw new Error(name + ': "' + s + '" is not a number');
        return n;
      }
      default:
        if (s === '') return '';
        try { return JSON.parse(s); } catch (e) { return text; }
    }
  }

  function parseTime(text, name) {
    const s = text.trim();
    if (s === '') throw new Error(name + ': enter a time');
    if (/^-?\d+$/.test(s)) return Number(s);
    return s;
  }

  function readFactForm() {
    const p = predicate($('fact-pred').value);
    if (!p) throw new Error('pick a predicate');
    const args = p.args.map((a, i) => {
      const el = $('fact-arg-' + i);
      return parseArg(el.value, a.type, a.name);
    });
    const fact = { pred: p.predicate, args };
    if (p.temporal) {
      const k = $('fact-t-kind').value;
      if (k === 'at') fact.t = { at: parseTime($('fact-t-at').value, 'at') };
      if (k === 'interval') fact.t = { start: parseTime($('fact-t-start').value, 'from'), end: parseTime($('fact-t-end').value, 'to') };
    }
    return fact;
  }

  function addFact() {
    try {
      const fact = readFactForm();
      st.facts.push({ fact, on: true });
      $('fact-error').textContent = '';
      for (const el of $('fact-args').querySelectorAll('input')) el.value = '';
      renderFacts();
    } catch (e) {
      $('fact-error').textContent = e.message;
    }
  }

  function editFact(i) {
    const { fact } = st.facts[i];
    const p = predicate(fact.pred);
    if (!p || !Array.isArray(fact.args)) return;
    $('fact-pred').value = fact.pred;
    renderFactForm();
    fact.args.forEach((v, j) => {
      const el = $('fact-arg-' + j);
      if (!el) return;
      if (typeof v === 'string' && p.args[j].type !== 'any') el.value = v;
      else if (v && typeof v === 'object' && v._type === 'int64') el.value = v.value;
      else el.value = typeof v === 'string' ? v : JSON.stringify(v);
    });
    if (fact.t && p.temporal) {
      const tv = (x) => (x === undefined ? '' : String(x));
      $('fact-t-kind').value = fact.t.at !== undefined ? 'at' : 'interval';
      $('fact-t-at').value = tv(fact.t.at);
      $('fact-t-start').value = tv(fact.t.start);
      $('fact-t-end').value = tv(fact.t.end);
      renderTemporalRows();
    }
    st.facts.splice(i, 1);
    renderFacts();
  }

  function renderFacts() {
    const ul = clear($('fact-list'));
    $('facts-count').textContent = st.facts.length ? st.facts.filter((f) => f.on).length + ' of ' + st.facts.length + ' sent' : '';
    if (!st.facts.length) ul.append(h('li', { class: 'empty' }, 'No facts yet.'));
    st.facts.forEach((entry, i) => {
      const f = entry.fact;
      const p = predicate(f.pred);
      const outputOnly = p && !p.input;
      const box = h('input', { type: 'checkbox', title: 'send this fact', checked: entry.on, onchange: (e) => { entry.on = e.target.checked; renderFacts(); } });
      ul.append(h('li', { class: 'fact-row' + (entry.on ? '' : ' off'), dataset: { pred: f.pred } },
        box,
        h('span', { class: 'ftext' }, factText(f), h('span', { class: 't' }, fmtTemporal(f.t))),
        outputOnly ? pill('state only', 'server') : null,
        f.category && f.category !== 'session' ? pill(f.category, 'server') : null,
        h('button', { class: 'small ghost', title: 'edit', onclick: () => editFact(i) }, 'edit'),
        h('button', { class: 'small ghost danger', title: 'remove', onclick: () => { st.facts.splice(i, 1); renderFacts(); } }, '✕')));
    });
    renderIntentInfo();
  }

  function importFacts() {
    const err = $('fact-error');
    try {
      const v = JSON.parse($('facts-json').value);
      const list = Array.isArray(v) ? v : v && Array.isArray(v.facts) ? v.facts : null;
      if (!list) throw new Error('want a JSON array of facts or {"facts": [...]}');
      for (const f of list) {
        if (!f || typeof f !== 'object' || typeof f.pred !== 'string') throw new Error('every fact needs "pred"');
      }
      st.facts = list.map((fact) => ({ fact, on: true }));
      err.textContent = '';
      renderFacts();
    } catch (e) {
      err.textContent = 'import: ' + e.message;
    }
  }

  function exportFacts() {
    const text = pretty(st.facts.map((f) => f.fact));
    $('facts-json').value = text;
    const a = $('facts-download');
    if (a.href) URL.revokeObjectURL(a.href);
    a.href = URL.createObjectURL(new Blob([text + '\n'], { type: 'application/json' }));
    a.hidden = false;
  }

  // ------------------------------------------------------------- evaluate

  function buildIntentRequest() {
    const req = { intent: { name: $('eval-intent').value }, facts: st.facts.filter((f) => f.on).map((f) => f.fact) };
    const params = $('eval-params').value.trim();
    if (params) {
      let p;
      try { p = JSON.parse(params); } catch (e) { throw new Error('intent params: not JSON'); }
      if (!p || typeof p !== 'object' || Array.isArray(p)) throw new Error('intent params must be a JSON object');
      req.intent.params = p;
    }
    const t = $('eval-time').value.trim();
    if (t) req.eval_time = /^-?\d+$/.test(t) ? Number(t) : t;
    const c = {};
    const budget = $('eval-budget').value.trim();
    if (budget) c.max_tokens_budget = Number(budget);
    const maxTools = $('eval-max-tools').value.trim();
    if (maxTools) c.max_tools_returned = Number(maxTools);
    if (Object.keys(c).length) req.constraints = c;
    const o = {};
    if ($('eval-proof').checked) o.include_proof_hints = true;
    if ($('eval-disclosure').value) o.disclosure_preference = $('eval-disclosure').value;
    if ($('eval-coverage').checked) o['x-include_rule_coverage'] = true;
    if (Object.keys(o).length) req.options = o;
    return req;
  }

  async function evaluate() {
    const errBox = clear($('eval-error'));
    let req;
    try {
      req = buildIntentRequest();
    } catch (e) {
      errBox.append(h('div', { class: 'inline-error' }, e.message));
      return;
    }
    banner('');
    $('eval-go').disabled = true;
    try {
      const reply = await api('POST', '/api/evaluate', { request: req });
      if (!reply.ok) {
        errBox.append(renderError(reply.error));
        show('results', false);
        show('proof', false);
        show('coverage', false);
        return;
      }
      st.evaluation = reply.result;
      renderResults();
    } finally {
      $('eval-go').disabled = false;
    }
  }

  function renderResults() {
    const v = st.evaluation;
    const r = v.response;
    show('results', true);
    const n = r.macro_tools.length;
    $('results-meta').textContent = n + ' for ' + v.request.intent.name + ' · eval_time ' + r.eval_time_used + ' · ' + r.eval_duration_ms + ' ms';
    const notes = clear($('results-notes'));
    const list = h('ul', { class: 'notes' });
    for (const w of r.warnings || []) list.append(h('li', {}, 'warning ', h('code', {}, w.code), ': ' + w.message));
    for (const f of v.dropped || []) list.append(h('li', {}, 'not sent (output-only predicate): ' + factText(f)));
    if (list.firstChild) notes.append(list);
    const dg = r.diagnostics;
    if (dg) {
      notes.append(h('div', { class: 'diag' }, fmtNum(dg.facts_evaluated) + ' facts evaluated · ' + fmtNum(dg.facts_derived) +
        ' derived · ' + fmtNum(dg.rules_fired) + ' rules fired' + (dg.phases_completed != null ? ' · ' + dg.phases_completed + ' phases' : '')));
    }
    const groups = clear($('results-groups'));
    if (!n) groups.append(h('p', { class: 'hint' }, 'No macro-tool fits these facts. Add facts (see the intent\'s required facts), or read the rule coverage below.'));
    for (const g of v.groups) {
      const col = h('div', { class: 'group', dataset: { level: g.level } }, h('h3', {}, g.level + ' disclosure · ' + g.cards.length));
      for (const c of g.cards) col.append(renderCard(c));
      groups.append(col);
    }
    const ph = r.proof_hints;
    const extra = clear($('results-extra'));
    if (ph && ((ph.excluded || []).length || (ph.unmatched_facts || []).length)) {
      const box = h('div', { class: 'hint' });
      for (const e of ph.excluded || []) box.append(h('div', {}, 'excluded ', h('code', {}, e.candidate), ' in ' + e.excluded_by + ': ' + e.reason));
      for (const u of ph.unmatched_facts || []) box.append(h('div', {}, 'unused fact ', h('code', {}, u.pred), ': ' + u.reason));
      extra.append(box);
    }
    show('proof', false);
    show('invoke', false); // the cards changed: invoke starts from one of them
    st.card = null;
    renderCoverage(v.coverage);
  }

  function renderCard(c) {
    const t = c.tool;
    const s = t.safety;
    const md = t.metadata;
    const meta = h('div', { class: 'meta' });
    if (md) meta.append(pill('score ' + md.score, ''));
    if (md && md.selection_phase) meta.append(pill(md.selection_phase, ''));
    if (c.needs_confirmation) meta.append(pill('needs confirmation', 'bad'));
    if (s) for (const e of s.side_effects || []) if (e !== 'none') meta.append(pill(e, 'warn'));
    if (s && s.idempotent) meta.append(pill('idempotent', 'ok'));
    if (t.validity && t.validity.expires_at) meta.append(pill('expires ' + t.validity.expires_at, 'warn'));
    const skills = ((t.context_injection || {}).skills || []).length;
    if (skills) meta.append(pill(skills + ' skill' + (skills > 1 ? 's' : ''), 'server'));
    return h('div', { class: 'card', dataset: { tool: t.name, macro: t.macro_id } },
      h('div', { class: 'title' }, h('span', { class: 'tname' }, t.name), pill(t.disclosure_level || '?', 'session')),
      h('div', { class: 'mid' }, t.macro_id),
      t.description ? h('div', { class: 'desc' }, t.description) : null,
      meta,
      h('div', { class: 'buttons' },
        h('button', { class: 'btn-invoke primary small', onclick: () => openInvoke(c) }, 'Invoke…'),
        c.has_proof ? h('button', { class: 'btn-proof small', onclick: () => openProof(t.macro_id) }, 'Proof tree') : h('span', { class: 'hint' }, 'no proof (ask for proof hints)'),
        h('details', {}, h('summary', {}, 'JSON'), h('pre', { class: 'code' }, pretty(t)))));
  }

  function markCard(macroID) {
    for (const el of document.querySelectorAll('.card')) el.classList.toggle('selected', el.dataset.macro === macroID);
  }

  // ------------------------------------------------------------ proof tree

  function openProof(macroID) {
    const pv = st.evaluation.proofs[macroID];
    if (!pv) return;
    markCard(macroID);
    show('proof', true);
    $('proof-title').textContent = pv.tool || macroID;
    const body = clear($('proof-body'));
    body.append(h('div', { class: 'proof-head' },
      pill('selected by ' + pv.selected_by, 'dark'), pill('score ' + pv.score, ''),
      pill(pv.stats.rules + ' rule nodes', ''), pill(pv.stats.facts + ' facts', 'session'),
      pv.stats.absent ? pill(pv.stats.absent + ' absent', '') : null,
      pv.stats.shared ? pill(pv.stats.shared + ' shared subtrees', '') : null,
      pill('depth ' + pv.stats.depth, ''),
      pv.synthesized ? pill('built from rule chain', 'warn') : null,
      pv.truncated ? pill('truncated', 'warn') : null));
    if (pv.rule_chain.length) {
      const chain = h('div', { class: 'chain' }, h('span', { class: 'hint' }, 'rule chain: '));
      pv.rule_chain.forEach((r, i) => {
        if (i) chain.append(h('span', { class: 'arrow' }, '←'));
        chain.append(h('span', { class: 'chip' }, r));
      });
      body.append(chain);
    }
    body.append(h('div', { class: 'legend' },
      h('span', {}, pill('rule', 'dark'), ' a derived fact and the rule that derived it'),
      h('span', {}, pill('session', 'session'), ' a fact you sent'),
      h('span', {}, pill('server', 'server'), ' a server fact'),
      h('span', {}, pill('absent', ''), ' had to be missing (negation)')),
    h('div', { class: 'buttons' },
      h('button', { class: 'small ghost', id: 'proof-expand', onclick: () => setCollapsed(false) }, 'Expand all'),
      h('button', { class: 'small ghost', id: 'proof-collapse', onclick: () => setCollapsed(true) }, 'Collapse all')));
    const tree = h('ul', { class: 'tree', id: 'proof-tree' });
    // Small trees open fully; large ones open three levels deep.
    if (pv.root) tree.append(renderNode(pv.root, 1, pv.stats.nodes <= 60 ? Infinity : 3));
    body.append(tree);
    if (pv.supporting_facts.length) {
      body.append(h('h3', {}, 'Supporting facts'));
      const ul = h('ul', { class: 'fact-list' });
      for (const f of pv.supporting_facts) ul.append(h('li', {}, h('span', { class: 'ftext' }, factText(f), h('span', { class: 't' }, fmtTemporal(f.t)))));
      body.append(ul);
    }
    scrollTo($('proof'), 'start');
  }

  function renderNode(n, depth, openDepth) {
    const cls = ['node', n.kind, n.type].join(' ');
    const li = h('li', { class: cls, dataset: { id: n.id, pred: n.pred } });
    const box = h('span', { class: 'node-box' });
    const inner = n.children && n.children.length;
    if (inner) {
      box.append(h('button', { class: 'toggle', title: 'expand or collapse', onclick: () => toggleNode(li) }, '▾'));
    }
    if (n.kind === 'rule') box.append(h('span', { class: 'kind', title: 'derived by a rule for ' + n.pred }, 'rule'));
    else if (n.kind === 'absent') box.append(pill('absent', ''));
    else box.append(pill(n.type, n.type === 'server' ? 'server' : 'session'));
    box.append(h('span', { class: 'fact' }, n.fact));
    if (n.ref) {
      box.append(h('span', { class: 'ref' }, '(derived as in ', h('button', { class: 'link', onclick: () => revealNode(n.ref) }, '#' + n.ref), ')'));
    }
    li.append(box);
    if (inner) {
      const ul = h('ul');
      for (const c of n.children) ul.append(renderNode(c, depth + 1, openDepth));
      li.append(ul);
      if (depth >= openDepth) collapse(li, true);
    }
    return li;
  }

  function collapse(li, on) {
    li.classList.toggle('collapsed', on);
    const t = li.querySelector(':scope > .node-box > .toggle');
    if (t) t.textContent = on ? '▸' : '▾';
  }
  function toggleNode(li) { collapse(li, !li.classList.contains('collapsed')); }
  function setCollapsed(on) {
    for (const li of $('proof-tree').querySelectorAll('li')) {
      if (li.querySelector(':scope > ul')) collapse(li, on && li.parentElement.id !== 'proof-tree');
    }
  }
  function revealNode(id) {
    const li = $('proof-tree').querySelector('li[data-id="' + id + '"]');
    if (!li) return;
    for (let p = li.parentElement; p && p.id !== 'proof-tree'; p = p.parentElement) if (p.tagName === 'LI') collapse(p, false);
    scrollTo(li, 'center');
    li.classList.add('flash');
    setTimeout(() => li.classList.remove('flash'), 1500);
  }

  // -------------------------------------------------------------- coverage

  function renderCoverage(cv) {
    show('coverage', !!cv);
    if (!cv) return;
    const body = clear($('coverage-body'));
    const pct = (x) => (cv.total ? (x * 100) / cv.total : 0) + '%';
    body.append(h('div', {}, h('strong', {}, cv.fired + ' of ' + cv.total + ' rules fired'), ' (' + cv.fired_percent + '%) · ' +
      cv.dormant + ' dormant · ' + cv.inapplicable + ' inapplicable'));
    body.append(h('div', { class: 'bar', title: 'fired / dormant / inapplicable' },
      h('span', { class: 'fired', style: { width: pct(cv.fired) } }),
      h('span', { class: 'dormant', style: { width: pct(cv.dormant) } }),
      h('span', { class: 'inapplicable', style: { width: pct(cv.inapplicable) } })));
    body.append(h('div', { class: 'legend' },
      h('span', {}, h('span', { class: 'cell fired' }, 'fired'), ' derived a fact in a proof'),
      h('span', {}, h('span', { class: 'cell partially_alive' }, 'partially alive'), ' some premises hold'),
      h('span', {}, h('span', { class: 'cell dead' }, 'dead'), ' a premise predicate has no facts'),
      h('span', {}, h('span', { class: 'cell inapplicable' }, 'inapplicable'), '')));
    const map = h('div', { class: 'heat', id: 'coverage-map' });
    for (const row of cv.rows) {
      map.append(h('div', { class: 'head' }, row.head), h('div', { class: 'cells' },
        row.cells.map((c) => h('span', {
          class: 'cell ' + c.status,
          title: c.rule + ': ' + c.status + (c.missing && c.missing.length ? '; missing ' + c.missing.join(', ') : ''),
        }, c.rule))));
    }
    body.append(map);
    if (cv.fired_unnamed) body.append(h('div', { class: 'hint' }, cv.fired_unnamed + ' more rules fired outside the proofs shown (the server names dormant rules only).'));
    const tb = h('tbody');
    for (const row of cv.rows) {
      for (const c of row.cells) {
        tb.append(h('tr', {}, h('td', { class: 'mono' }, c.rule), h('td', {}, h('span', { class: 'cell ' + c.status }, c.status)), h('td', { class: 'mono' }, (c.missing || []).join(', '))));
      }
    }
    body.append(h('details', {}, h('summary', {}, 'As a table'),
      h('table', { class: 'table', id: 'coverage-table' }, h('thead', {}, h('tr', {}, h('th', {}, 'rule'), h('th', {}, 'status'), h('th', {}, 'missing predicates'))), tb)));
  }

  // ---------------------------------------------------------------- invoke

  function steps(active) {
    if (active === 'Confirm') st.confirmStep = true; // the server asked, even if the card did not say
    const names = st.card && (st.card.needs_confirmation || st.confirmStep) ? ['Arguments', 'Confirm', 'Result'] : ['Arguments', 'Result'];
    const ol = clear($('invoke-steps'));
    const at = names.indexOf(active);
    names.forEach((n, i) => ol.append(h('li', { class: (i === at ? 'active' : i < at ? 'done' : '') + (n === 'Confirm' ? ' confirm' : '') }, n)));
  }

  function openInvoke(card) {
    st.card = card;
    st.confirmStep = false;
    markCard(card.tool.macro_id);
    show('invoke', true);
    $('invoke-title').textContent = card.tool.name + ' · ' + card.tool.macro_id;
    steps('Arguments');
    const body = clear($('invoke-body'));
    if (card.tool.description) body.append(h('p', { class: 'hint' }, card.tool.description));
    const form = h('div', { class: 'form', id: 'invoke-form' });
    for (const f of card.fields) form.append(...fieldInput(f));
    if (!card.fields.length) {
      form.append(h('label', { for: 'invoke-raw' }, 'args'), h('div', { class: 'finput' },
        h('textarea', { id: 'invoke-raw', rows: 3, spellcheck: 'false' }, '{}'),
        h('span', { class: 'fdesc' }, card.tool.input_schema ? 'The schema has no properties: type the arguments as a JSON object.' : 'This disclosure level has no input_schema: type the arguments as a JSON object, or evaluate at full disclosure.')));
    }
    form.append(h('label', { for: 'invoke-time' }, 'eval_time'), h('div', { class: 'finput' },
      h('input', { id: 'invoke-time', placeholder: 'server clock' }), h('span', { class: 'fdesc' }, 'optional; RFC 3339 or epoch ms')));
    body.append(form);
    body.append(h('div', { class: 'buttons' },
      h('button', { class: 'primary', id: 'invoke-go', onclick: () => invokeClicked() }, card.needs_confirmation ? 'Continue to confirmation' : 'Invoke'),
      h('span', { class: 'inline-error', id: 'invoke-error' })));
    body.append(h('div', { id: 'invoke-confirm' }), h('div', { id: 'invoke-result' }));
    scrollTo($('invoke'), 'start');
  }

  function fieldInput(f) {
    const id = 'arg-' + f.name;
    let input;
    const desc = [f.type, f.required ? 'required' : 'optional', f.default !== undefined ? 'default ' + JSON.stringify(f.default) : '', f.description || ''].filter(Boolean).join(' · ');
    if (f.widget === 'select') {
      input = h('select', { id, dataset: { field: f.name } }, f.required ? null : h('option', { value: '' }, '(omit)'),
        f.enum.map((v, i) => h('option', { value: String(i) }, typeof v === 'string' ? v : JSON.stringify(v))));
    } else if (f.widget === 'checkbox') {
      input = h('select', { id, dataset: { field: f.name } }, f.required ? null : h('option', { value: '' }, '(omit)'),
        h('option', { value: 'true' }, 'true'), h('option', { value: 'false' }, 'false'));
    } else if (f.widget === 'json') {
      input = h('textarea', { id, rows: 2, spellcheck: 'false', dataset: { field: f.name }, placeholder: 'JSON' });
    } else {
      input = h('input', { id, dataset: { field: f.name }, type: f.widget === 'number' ? 'number' : 'text', step: f.type === 'integer' ? '1' : 'any' });
    }
    return [h('label', { for: id }, f.name, f.required ? h('span', { class: 'req' }, ' *') : null), h('div', { class: 'finput' }, input, h('span', { class: 'fdesc' }, desc))];
  }

  function readArgs() {
    const raw = $('invoke-raw');
    if (raw) {
      let v;
      try { v = JSON.parse(raw.value || '{}'); } catch (e) { throw new Error('args: not JSON'); }
      if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('args must be a JSON object');
      return v;
    }
    const args = {};
    for (const f of st.card.fields) {
      const el = $('arg-' + f.name);
      const s = el.value;
      if (s === '') {
        continue; // omitted: the server applies defaults and checks required
      }
      switch (f.widget) {
        case 'select': args[f.name] = f.enum[Number(s)]; break;
        case 'checkbox': args[f.name] = s === 'true'; break;
        case 'number': {
          const n = Number(s);
          if (!Number.isFinite(n)) throw new Error(f.name + ': not a number');
          args[f.name] = n;
          break;
        }
        case 'json':
          try { args[f.name] = JSON.parse(s); } catch (e) { throw new Error(f.name + ': not JSON'); }
          break;
        default: args[f.name] = s;
      }
    }
    return args;
  }

  function buildInvoke() {
    const req = { macro_id: st.card.tool.macro_id, args: readArgs() };
    const t = $('invoke-time').value.trim();
    if (t) req.eval_time = /^-?\d+$/.test(t) ? Number(t) : t;
    return req;
  }

  function invokeClicked() {
    const err = $('invoke-error');
    err.textContent = '';
    let req;
    try { req = buildInvoke(); } catch (e) { err.textContent = e.message; return; }
    if (st.card.needs_confirmation) {
      showConfirm(req, null);
      return;
    }
    run(() => sendInvoke(req, false, ''));
  }

  // showConfirm draws the confirmation step: what the tool does, then the
  // user's decision. refusal is the server's confirmation_required error
  // when the step comes after one.
  function showConfirm(req, refusal) {
    steps('Confirm');
    const box = clear($('invoke-confirm'));
    clear($('invoke-result'));
    const s = st.card.tool.safety || {};
    const keyed = st.session.confirmation_key;
    const panel = h('div', { class: 'confirm-box', id: 'confirm-step' },
      h('h3', {}, 'Confirmation required'),
      h('div', {}, 'The server marks ', h('code', {}, st.card.tool.name), ' as needing your confirmation before it runs (Spec 08 §4.2).'),
      h('ul', {},
        h('li', {}, 'side effects: ' + ((s.side_effects || []).join(', ') || 'not stated')),
        h('li', {}, s.reversible ? 'reversible' : 'not reversible'),
        h('li', {}, s.idempotent ? 'idempotent' : 'not idempotent'),
        h('li', {}, 'arguments: ', h('code', {}, JSON.stringify(req.args)))),
      keyed ? h('div', { class: 'hint' }, 'Confirming signs a single-use confirmation token for this macro_id with the server\'s confirmation key, valid for 2 minutes.')
        : h('label', { class: 'row' }, 'Confirmation token', h('input', { id: 'confirm-token', placeholder: 'v1.…', spellcheck: 'false' })),
      h('div', { class: 'buttons' },
        h('button', { class: 'confirm', id: 'confirm-go', onclick: () => {
          const tok = keyed ? '' : $('confirm-token').value.trim();
          if (!keyed && !tok) { $('invoke-error').textContent = 'paste a confirmation token'; return; }
          run(() => sendInvoke(req, keyed, tok));
        } }, 'Confirm and invoke'),
        h('button', { class: 'ghost', id: 'confirm-skip', onclick: () => run(() => sendInvoke(req, false, '')), title: 'see what the server answers without confirmation' }, 'Send without confirmation'),
        h('button', { class: 'ghost', onclick: () => { clear(box); steps('Arguments'); } }, 'Cancel')));
    if (refusal) box.append(refusal);
    box.append(panel);
    scrollTo(panel, 'center');
  }

  async function sendInvoke(req, confirm, pastedToken) {
    const body = { request: Object.assign({}, req), confirm };
    if (pastedToken) body.request.confirmation_token = pastedToken;
    const out = clear($('invoke-result'));
    const reply = await api('POST', '/api/invoke', body);
    clear($('invoke-confirm'));
    if (!reply.ok) {
      const ev = renderError(reply.error);
      if (reply.error && reply.error.error && reply.error.error.code === 'confirmation_required') {
        showConfirm(req, ev);
        return;
      }
      steps('Result');
      out.append(ev);
      return;
    }
    st.lastInvoke = reply.result;
    steps('Result');
    renderInvokeResult(out, reply.result);
  }

  function renderInvokeResult(out, v) {
    const r = v.response;
    const o = r.observability || {};
    out.append(h('div', { id: 'invoke-ok' },
      h('div', { class: 'result-summary' }, o.summary || 'done'),
      h('div', { class: 'meta' }, pill((o.duration_ms ?? '?') + ' ms', ''), v.confirmed ? pill('confirmed', 'warn') : null)));
    if ((o.events || []).length) {
      const tb = h('tbody');
      for (const e of o.events) tb.append(h('tr', {}, h('td', { class: 'mono' }, e.action), h('td', {}, pill(e.status, e.status === 'success' ? 'ok' : e.status === 'failure' ? 'bad' : '')), h('td', {}, String(e.duration_ms)), h('td', {}, e.detail || '')));
      out.append(h('h3', {}, 'Events'), h('table', { class: 'table' }, h('thead', {}, h('tr', {}, h('th', {}, 'action'), h('th', {}, 'status'), h('th', {}, 'ms'), h('th', {}, 'detail'))), tb));
    }
    out.append(h('h3', {}, 'Result'), h('pre', { class: 'code', id: 'invoke-result-json' }, pretty(r.result)));
    const d = r.state_delta || { assert: [], retract: [] };
    out.append(h('h3', {}, 'State delta'));
    if (!(d.assert || []).length && !(d.retract || []).length) {
      out.append(h('div', { class: 'hint' }, 'No change to the working facts.'));
    } else {
      const tb = h('tbody');
      for (const f of d.retract || []) tb.append(h('tr', { class: 'retract' }, h('td', {}, 'retract'), h('td', { class: 'mono' }, factText(f) + fmtTemporal(f.t))));
      for (const f of d.assert || []) tb.append(h('tr', { class: 'assert' }, h('td', {}, 'assert'), h('td', { class: 'mono' }, factText(f) + fmtTemporal(f.t))));
      out.append(h('table', { class: 'table delta', id: 'delta-table' }, tb),
        h('div', { class: 'buttons' }, h('button', { id: 'delta-apply', onclick: () => run(() => applyDelta(d)) }, 'Apply to facts'), h('span', { class: 'hint', id: 'delta-note' })));
    }
    const next = r.next;
    if (next && ((next.suggested_intents || []).length)) {
      out.append(h('h3', {}, 'Next'));
      for (const si of next.suggested_intents) {
        out.append(h('div', { class: 'buttons' },
          h('button', { class: 'ghost', dataset: { next: si.name }, onclick: () => run(() => followNext(si, next.continuation_facts || [])) }, 'Evaluate ' + si.name),
          h('span', { class: 'hint' }, si.description || '')));
      }
    }
  }

  async function applyDelta(delta) {
    const v = await api('POST', '/api/apply', { facts: st.facts.map((f) => f.fact), delta });
    const off = new Set(st.facts.filter((f) => !f.on).map((f) => JSON.stringify(f.fact)));
    st.facts = v.facts.map((fact) => ({ fact, on: !off.has(JSON.stringify(fact)) }));
    renderFacts();
    const note = $('delta-note');
    if (note) note.textContent = v.retracted + ' retracted, ' + v.asserted + ' asserted';
  }

  async function followNext(si, continuation) {
    if (continuation.length) await applyDelta({ assert: continuation, retract: [] });
    $('eval-intent').value = si.name;
    $('eval-params').value = si.params ? JSON.stringify(si.params) : '';
    renderIntentInfo();
    scrollTo($('evaluate'), 'start');
  }

  // ---------------------------------------------------------------- errors

  // renderError draws an error answer: code, status, the registry's entry,
  // the message and every detail.
  function renderError(ev) {
    const e = ev.error || {};
    const reg = ev.registry;
    const top = h('div', { class: 'error-top' },
      h('span', { class: 'error-code' }, e.code || 'error'),
      ev.status ? pill('HTTP ' + ev.status, 'bad') : null,
      reg ? pill(reg.category, '') : pill(ev.transport ? 'transport' : 'custom code', ''),
      pill(e.recoverable ? 'recoverable' : 'not recoverable', e.recoverable ? 'warn' : 'bad'),
      e.retry_after_ms != null ? pill('retry after ' + e.retry_after_ms + ' ms', 'warn') : null);
    const box = h('div', { class: 'error-view', dataset: { code: e.code || '' } }, top, h('div', { class: 'error-msg' }, e.message || ''));
    if (reg) box.append(h('div', { class: 'error-registry' }, 'Registry: ' + reg.description + ' (HTTP ' + reg.http_status + ', ' + (reg.recoverable ? 'recoverable' : 'not recoverable') + ')'));
    const d = e.details || {};
    if ((d.violations || []).length) {
      const tb = h('tbody');
      for (const v of d.violations) {
        const exp = [v.expected_arity != null ? 'arity ' + v.expected_arity : '', v.expected_type || ''].filter(Boolean).join(' ');
        const act = [v.actual_arity != null ? 'arity ' + v.actual_arity : '', v.actual_type || ''].filter(Boolean).join(' ');
        tb.append(h('tr', {}, h('td', {}, v.fact_index >= 0 ? String(v.fact_index) : '–'), h('td', { class: 'mono' }, v.predicate), h('td', { class: 'mono' }, v.issue),
          h('td', {}, v.message + (v.suggestion ? ' — ' + v.suggestion : '')), h('td', {}, exp), h('td', {}, act)));
      }
      box.append(h('table', { class: 'table violations' }, h('thead', {}, h('tr', {}, h('th', {}, 'fact'), h('th', {}, 'predicate'), h('th', {}, 'issue'), h('th', {}, 'message'), h('th', {}, 'expected'), h('th', {}, 'actual'))), tb));
    }
    if ((d.schema_errors || []).length) {
      const tb = h('tbody');
      for (const s of d.schema_errors) tb.append(h('tr', {}, h('td', { class: 'mono' }, s.path), h('td', {}, s.message), h('td', { class: 'mono' }, s.keyword)));
      box.append(h('table', { class: 'table schema-errors' }, h('thead', {}, h('tr', {}, h('th', {}, 'path'), h('th', {}, 'message'), h('th', {}, 'keyword'))), tb));
    }
    const kv = h('dl', { class: 'kv' });
    if (d.budget) kv.append(h('dt', {}, 'budget'), h('dd', {}, d.budget.consumed + ' of ' + d.budget.limit + ' ' + d.budget.unit));
    for (const [k, v] of Object.entries(d)) {
      if (['violations', 'schema_errors', 'budget'].includes(k)) continue;
      kv.append(h('dt', {}, k), h('dd', { class: 'mono' }, typeof v === 'string' ? v : JSON.stringify(v)));
    }
    if (kv.firstChild) box.append(kv);
    const meta = [];
    if (ev.local) meta.push('found by the client before sending (the answer the server would give)');
    if (ev.request_id) meta.push('request ' + ev.request_id);
    if (ev.attempts > 1) meta.push(ev.attempts + ' attempts');
    if (meta.length) box.append(h('div', { class: 'error-meta' }, meta.join(' · ')));
    box.append(h('details', {}, h('summary', {}, 'Error envelope'), h('pre', { class: 'code' }, pretty(ev.envelope))));
    return box;
  }

  // --------------------------------------------------------------- history

  async function refreshHistory() {
    let list;
    try { list = await api('GET', '/api/history'); } catch (e) { return; }
    const tb = clear($('history-table').tBodies[0]);
    $('history-count').textContent = list.length ? String(list.length) : '';
    for (const e of list.slice().reverse()) {
      tb.append(h('tr', { dataset: { id: e.id, kind: e.kind } },
        h('td', {}, String(e.id)),
        h('td', { class: 'mono' }, (e.time || '').slice(11, 19)),
        h('td', {}, pill(e.kind, ''), ' ', e.summary),
        h('td', {}, e.ok ? pill('ok', 'ok') : pill(e.code + (e.status ? ' ' + e.status : ''), 'bad')),
        h('td', {}, String(e.duration_ms))));
    }
    if (!list.length) tb.append(h('tr', {}, h('td', { colspan: 5, class: 'hint' }, 'Requests you make appear here.')));
  }

  async function exportScript(format) {
    const res = await fetch('/api/history/script?format=' + format, { headers: { 'X-Inspector-Token': token } });
    const text = await res.text();
    if (!res.ok) throw new Error(text);
    const pre = $('script-out');
    pre.textContent = text;
    pre.hidden = false;
    const a = $('script-download');
    if (a.href) URL.revokeObjectURL(a.href);
    a.href = URL.createObjectURL(new Blob([text], { type: 'text/x-shellscript' }));
    a.download = 'manglecp-session.' + format + '.sh';
    a.textContent = 'Download ' + a.download;
    a.hidden = false;
  }

  // ------------------------------------------------------------------ start

  async function loadSession(refresh) {
    if (refresh) {
      const reply = await api('POST', '/api/manifest/refresh');
      st.session = reply.result;
      renderSession();
      renderFacts();
      if (!reply.ok) $('manifest-body').prepend(h('div', {}, h('div', { class: 'hint' }, 'Refreshing the manifest failed; the last one is shown.'), renderError(reply.error)));
      return;
    }
    st.session = await api('GET', '/api/session');
    renderSession();
    renderFacts();
  }

  function wire() {
    $('fact-pred').addEventListener('change', renderFactForm);
    $('fact-t-kind').addEventListener('change', renderTemporalRows);
    $('fact-add').addEventListener('click', addFact);
    $('fact-args').addEventListener('keydown', (e) => { if (e.key === 'Enter') addFact(); });
    $('facts-import').addEventListener('click', importFacts);
    $('facts-export').addEventListener('click', exportFacts);
    $('facts-clear').addEventListener('click', () => { st.facts = []; renderFacts(); });
    $('eval-intent').addEventListener('change', renderIntentInfo);
    $('eval-now').addEventListener('click', () => { $('eval-time').value = new Date().toISOString().replace(/\.\d+Z$/, 'Z'); });
    $('eval-go').addEventListener('click', () => run(evaluate));
    $('refresh').addEventListener('click', () => run(() => loadSession(true)));
    $('export-curl').addEventListener('click', () => run(() => exportScript('curl')));
    $('export-cli').addEventListener('click', () => run(() => exportScript('cli')));
  }

  // A broken page says so instead of failing silently.
  window.addEventListener('error', (e) => banner('page error: ' + e.message));
  window.addEventListener('unhandledrejection', (e) => banner('page error: ' + ((e.reason && e.reason.message) || e.reason)));
  document.addEventListener('securitypolicyviolation', (e) => banner('blocked by the content security policy: ' + e.violatedDirective));

  document.addEventListener('DOMContentLoaded', () => {
    wire();
    if (!token) {
      banner('This page needs its session token: open the URL that manglecp inspect printed (it ends in #token=…).');
      return;
    }
    run(() => loadSession(false)).then(() => { document.body.dataset.ready = '1'; });
  });
})();
