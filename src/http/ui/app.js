/* gpuwatch status page: the fleet grid, live alerts, checkpoints, exclusions,
 * per-GPU charts and a query box. Plain ES2017, no libraries; it reads only
 * this server's JSON APIs and refreshes every 10 s.
 *
 * For tests the page exposes what it drew in the DOM: body[data-state]
 * ("ready" after the first complete refresh), body[data-fetches] and
 * body[data-fetch-errors] (every API request of the page and the failed
 * ones, with the last failure in body[data-last-error]), #grid[data-nodes],
 * [data-gpus], [data-render-ms], and one <li data-node data-gpu data-state>
 * in the hidden list #sick for every GPU that is not healthy.
 * URL parameters: window=1h|6h|24h (recent alerts), synthetic=NxG (draw a
 * made-up fleet of N nodes x G GPUs instead of the real one: a load test of
 * the grid), gpu=node/index (open that GPU's charts). */
'use strict';

const REFRESH_MS = 10000;
const STATES = ['ok', 'recent', 'info', 'pending', 'warning', 'critical'];
const RANK = { ok: 0, recent: 1, info: 2, pending: 3, warning: 4, critical: 5 };
const COLORS = ['#2f8f4e', '#8c7a2e', '#3f76b5', '#d7b93a', '#e07b24', '#d23a33'];
const PALETTE = ['#5aa9e6', '#f28e2b', '#59a14f', '#e15759', '#b07aa1', '#edc948', '#76b7b2', '#ff9da7',
  '#9c755f', '#bab0ac'];
const CHARTS = [
  { title: 'GPU temperature', unit: '°C', expr: 'max(DCGM_FI_DEV_GPU_TEMP{@SEL})' },
  { title: 'memory temperature', unit: '°C', expr: 'max(DCGM_FI_DEV_MEMORY_TEMP{@SEL})' },
  { title: 'power', unit: 'W', expr: 'max(DCGM_FI_DEV_POWER_USAGE{@SEL})' },
  { title: 'SM clock', unit: 'MHz', expr: 'max(DCGM_FI_DEV_SM_CLOCK{@SEL})' },
  { title: 'GPU utilisation', unit: '%', expr: 'max(DCGM_FI_DEV_GPU_UTIL{@SEL})' },
  { title: 'last XID', unit: '', expr: 'max(DCGM_FI_DEV_XID_ERRORS{@SEL})' },
  { title: 'ECC single-bit (volatile)', unit: '', expr: 'max(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{@SEL})' },
  { title: 'NVLink CRC flit errors', unit: '/s', expr: 'sum(rate(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{@SEL}[5m]))' },
  { title: 'NVLink replays + recoveries', unit: '/s',
    expr: 'sum(rate(DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{@SEL}[5m])) + ' +
      'sum(rate(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL{@SEL}[5m]))' },
];

const params = new URLSearchParams(location.search);
const S = {
  window: /^(1h|6h|24h)$/.test(params.get('window') || '') ? params.get('window') : '6h',
  synthetic: null,
  nodes: [],            // sorted node names
  nodeLabel: new Map(), // node -> the label naming it in DCGM series (hostname, Hostname, instance)
  gpus: 8,              // columns per node
  state: new Uint8Array(0), // RANK per cell, nodes.length x gpus
  present: new Uint8Array(0), // 1: the cell has telemetry
  why: new Map(),       // "node/gpu" or "node/*" -> [alert]
  live: [],
  excluded: new Map(),  // node -> exclusion (/api/v1/exclusions)
  sel: null,            // {node, gpu}
  layout: null,
  fetches: 0,
  failed: 0,
  timer: 0,
  busy: false,
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  if (attrs)
    for (const k of Object.keys(attrs)) {
      if (k === 'text') e.textContent = attrs[k];
      else if (k === 'cls') e.className = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
  for (const k of kids) e.append(k);
  return e;
}

/* ---- fetching ---- */

function noteFailure(url, msg) {
  S.failed++;
  document.body.dataset.fetchErrors = String(S.failed);
  document.body.dataset.lastError = url + ': ' + msg;
  const e = $('errors');
  e.hidden = false;
  const last = decodeURIComponent(url.replace(/\+/g, ' ')) + ': ' + msg;
  e.textContent = S.failed + ' failed request' + (S.failed > 1 ? 's' : '') + ' (last: ' +
    (last.length > 140 ? last.slice(0, 140) + '…' : last) + ')';
  e.title = last;
}

/* GET api/v1/<path>; resolves to the "data" member. A failure of the page's
 * own requests is recorded; a user's query (own = false) only throws. */
async function api(path, q, own = true) {
  const url = 'api/v1/' + path + (q ? '?' + new URLSearchParams(q).toString() : '');
  if (own) {
    S.fetches++;
    document.body.dataset.fetches = String(S.fetches);
  }
  let r, body;
  try {
    r = await fetch(url, { headers: { Accept: 'application/json' }, cache: 'no-store' });
    body = await r.json();
  } catch (e) {
    if (own) noteFailure(url, String(e));
    throw e;
  }
  if (!r.ok || body.status !== 'success') {
    const msg = 'HTTP ' + r.status + (body && body.error ? ': ' + body.error : '');
    if (own) noteFailure(url, msg);
    throw new Error(msg);
  }
  return body.data;
}

const nowSec = () => Date.now() / 1000;

/* ---- fleet model ---- */

function natCmp(a, b) {
  return a.localeCompare(b, undefined, { numeric: true });
}

function nodeOf(m) {
  if (m.hostname) return [m.hostname, 'hostname'];
  if (m.Hostname) return [m.Hostname, 'Hostname'];
  if (m.instance) return [m.instance.replace(/:\d+$/, ''), 'instance'];
  return [null, null];
}

function keyOf(node, gpu) {
  return node + '/' + (gpu === undefined || gpu === null || gpu === '' ? '*' : gpu);
}

function syntheticFleet(spec) {
  const m = /^(\d{1,5})x(\d{1,2})$/.exec(spec || '');
  if (!m) return null;
  const n = Math.min(+m[1], 20000), g = Math.max(1, Math.min(+m[2], 16));
  const inv = [];
  for (let i = 0; i < n; i++) {
    const node = 'node' + String(i + 1).padStart(4, '0');
    for (let k = 0; k < g; k++) inv.push({ metric: { hostname: node, gpu: String(k) } });
  }
  return inv;
}

function syntheticAlerts(n, g) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const node = 'node' + String(i + 1).padStart(4, '0');
    if (i % 97 === 5) out.push({ node, gpu: String(i % g), severity: 'critical', state: 'firing', name: 'GpuXidError' });
    else if (i % 41 === 3) out.push({ node, gpu: String((i * 3) % g), severity: 'warning', state: 'firing', name: 'GpuNvlinkErrors' });
    else if (i % 211 === 7) out.push({ node, gpu: null, severity: 'critical', state: 'firing', name: 'NodeSilent' });
  }
  return out;
}

/* Builds nodes x gpus from the inventory (series of a DCGM gauge) and the
 * nodes named by alerts; nodes seen earlier stay (a silent node is news). */
function buildFleet(inventory, alertNodes) {
  const seen = new Set(S.nodes);
  const cells = new Set();
  let maxGpu = 0;
  for (const s of inventory) {
    const [node, label] = nodeOf(s.metric);
    if (!node) continue;
    seen.add(node);
    if (!S.nodeLabel.has(node)) S.nodeLabel.set(node, label);
    const g = parseInt(s.metric.gpu, 10);
    if (g >= 0 && g < 64) {
      cells.add(node + '/' + g);
      if (g + 1 > maxGpu) maxGpu = g + 1;
    }
  }
  for (const n of alertNodes) seen.add(n);
  S.nodes = Array.from(seen).sort(natCmp);
  if (maxGpu) S.gpus = maxGpu;
  S.index = new Map(S.nodes.map((n, i) => [n, i]));
  S.present = new Uint8Array(S.nodes.length * S.gpus);
  for (const c of cells) {
    const i = c.lastIndexOf('/');
    const ni = S.index.get(c.slice(0, i)), g = +c.slice(i + 1);
    if (ni !== undefined && g < S.gpus) S.present[ni * S.gpus + g] = 1;
  }
}

/* One alert-ish record: {node, gpu|null, severity, state, name, summary,
 * evidence, action, live}. Marks the cell (or every cell of the node). */
function mark(st, a) {
  const ni = S.index.get(a.node);
  if (ni === undefined) return;
  let r;
  if (!a.live) r = RANK.recent;
  else if (a.state === 'pending') r = RANK.pending;
  else r = RANK[a.severity] !== undefined ? RANK[a.severity] : RANK.warning;
  const g = a.gpu === null || a.gpu === undefined || a.gpu === '' ? -1 : parseInt(a.gpu, 10);
  const from = g >= 0 ? g : 0, to = g >= 0 ? g + 1 : S.gpus;
  for (let k = from; k < to && k < S.gpus; k++) {
    const i = ni * S.gpus + k;
    if (r > st[i]) st[i] = r;
  }
  const key = keyOf(a.node, g >= 0 ? g : null);
  if (!S.why.has(key)) S.why.set(key, []);
  S.why.get(key).push(a);
}

function applyAlerts(live, recent) {
  const st = new Uint8Array(S.nodes.length * S.gpus);
  S.why = new Map();
  const liveKeys = new Set();
  for (const a of live) {
    mark(st, a);
    liveKeys.add(keyOf(a.node, a.gpu) + '|' + a.name);
  }
  for (const a of recent)
    if (!liveKeys.has(keyOf(a.node, a.gpu) + '|' + a.name)) mark(st, a);
  S.state = st;
}

/* ---- the grid (one canvas) ---- */

function computeLayout(width) {
  const n = S.nodes.length, g = S.gpus;
  const big = n <= 160;
  const cell = big ? 14 : n <= 600 ? 9 : 7;
  const gap = 1, pad = big ? 10 : 5;
  const label = big ? 13 : 0;
  const tileW = g * (cell + gap) - gap + pad;
  const tileH = label + cell + (big ? 8 : 3);
  const cols = Math.max(1, Math.floor((width + pad) / tileW));
  const rows = Math.ceil(n / cols);
  return { cell, gap, pad, label, tileW, tileH, cols, rows, width, height: Math.max(rows * tileH, 20) };
}

function drawGrid() {
  const t0 = performance.now();
  const cv = $('grid');
  const width = Math.max(200, cv.parentElement.clientWidth);
  const L = computeLayout(width);
  S.layout = L;
  const dpr = window.devicePixelRatio || 1;
  if (cv.width !== Math.round(width * dpr) || cv.height !== Math.round(L.height * dpr)) {
    cv.width = Math.round(width * dpr);
    cv.height = Math.round(L.height * dpr);
    cv.style.height = L.height + 'px';
  }
  const ctx = cv.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, L.height);
  const n = S.nodes.length, g = S.gpus;
  /* one fill colour at a time: 8,000 rectangles cost about a millisecond */
  for (let r = 0; r < STATES.length; r++) {
    ctx.fillStyle = COLORS[r];
    for (let ni = 0; ni < n; ni++) {
      const x0 = (ni % L.cols) * L.tileW, y0 = Math.floor(ni / L.cols) * L.tileH + L.label;
      for (let k = 0; k < g; k++) {
        const i = ni * g + k;
        if (S.state[i] !== r || (r === 0 && !S.present[i])) continue;
        ctx.fillRect(x0 + k * (L.cell + L.gap), y0, L.cell, L.cell);
      }
    }
  }
  ctx.fillStyle = '#3a414b';  /* no telemetry and no alert */
  for (let i = 0; i < n * g; i++)
    if (S.state[i] === 0 && !S.present[i]) {
      const ni = Math.floor(i / g), k = i % g;
      ctx.fillRect((ni % L.cols) * L.tileW + k * (L.cell + L.gap), Math.floor(ni / L.cols) * L.tileH + L.label,
        L.cell, L.cell);
    }
  if (L.label) {
    ctx.font = '10px system-ui, sans-serif';
    ctx.textBaseline = 'top';
    for (let ni = 0; ni < n; ni++) {
      const ex = S.excluded.has(S.nodes[ni]);
      ctx.fillStyle = ex ? '#ff8a80' : '#8b96a3';
      ctx.fillText(S.nodes[ni] + (ex ? ' (exclude)' : ''), (ni % L.cols) * L.tileW, Math.floor(ni / L.cols) * L.tileH,
        L.tileW - L.pad);
    }
  } else {
    ctx.fillStyle = '#ff8a80';  /* excluded nodes: a line under the tile */
    for (let ni = 0; ni < n; ni++)
      if (S.excluded.has(S.nodes[ni]))
        ctx.fillRect((ni % L.cols) * L.tileW, Math.floor(ni / L.cols) * L.tileH + L.cell + 1, g * (L.cell + L.gap) - L.gap, 1);
  }
  if (S.sel && S.index && S.index.has(S.sel.node)) {
    const ni = S.index.get(S.sel.node);
    ctx.strokeStyle = '#ffffff';
    ctx.lineWidth = 2;
    ctx.strokeRect((ni % L.cols) * L.tileW + S.sel.gpu * (L.cell + L.gap) - 1,
      Math.floor(ni / L.cols) * L.tileH + L.label - 1, L.cell + 2, L.cell + 2);
  }
  const ms = performance.now() - t0;
  cv.dataset.nodes = String(n);
  cv.dataset.gpus = String(n * g);
  cv.dataset.renderMs = ms.toFixed(1);
}

/* The hidden list of unhealthy GPUs (for tests and screen readers) and the
 * counts in the header. */
function updateSickList() {
  const ul = $('sick');
  const frag = document.createDocumentFragment();
  const counts = [0, 0, 0, 0, 0, 0];
  const g = S.gpus;
  for (let i = 0; i < S.state.length; i++) {
    counts[S.state[i]]++;
    if (S.state[i] === 0) continue;
    frag.append(el('li', { 'data-node': S.nodes[Math.floor(i / g)], 'data-gpu': String(i % g),
      'data-state': STATES[S.state[i]] }));
  }
  ul.replaceChildren(frag);
  const parts = [];
  for (let r = STATES.length - 1; r >= 1; r--) if (counts[r]) parts.push(counts[r] + ' ' + STATES[r]);
  $('fleet-count').textContent = S.nodes.length + ' nodes, ' + S.nodes.length * g + ' GPUs' +
    (parts.length ? ': ' + parts.join(', ') : ': all healthy');
  $('summary').textContent = S.live.filter((a) => a.state === 'firing').length + ' firing, ' +
    S.live.filter((a) => a.state === 'pending').length + ' pending';
}

function hitTest(x, y) {
  const L = S.layout;
  if (!L) return null;
  const col = Math.floor(x / L.tileW), row = Math.floor(y / L.tileH);
  if (col >= L.cols) return null;
  const ni = row * L.cols + col;
  if (ni < 0 || ni >= S.nodes.length) return null;
  const dx = x - col * L.tileW, dy = y - row * L.tileH - L.label;
  const k = Math.floor(dx / (L.cell + L.gap));
  if (dy < -L.label || dy > L.cell || k < 0 || k >= S.gpus) return { node: S.nodes[ni], gpu: null };
  return { node: S.nodes[ni], gpu: k };
}

function showTip(ev) {
  const tip = $('tip');
  const cv = $('grid');
  const rect = cv.getBoundingClientRect();
  const x = ev.clientX - rect.left, y = ev.clientY - rect.top;
  const h = hitTest(x, y);
  if (!h) {
    tip.hidden = true;
    return;
  }
  const ni = S.index.get(h.node);
  const kids = [];
  let title = h.node;
  let state = 'ok';
  if (h.gpu !== null) {
    title += ' GPU ' + h.gpu;
    state = STATES[S.state[ni * S.gpus + h.gpu]];
  }
  kids.push(el('b', { text: title }), ' ', el('span', { cls: 'sev st-' + state, text: state }));
  const list = (S.why.get(keyOf(h.node, h.gpu)) || []).concat(h.gpu !== null ? S.why.get(keyOf(h.node, null)) || [] : []);
  if (!list.length) kids.push(el('div', { cls: 'ev', text: h.gpu !== null && !S.present[ni * S.gpus + h.gpu] ?
    'no telemetry in the last 15 min' : 'no alert in the last ' + S.window }));
  const ex = S.excluded.get(h.node);
  if (ex) kids.push(el('div', null, 'node to exclude (' + (ex.action || '') + '): ' + (ex.reason || '')));
  for (const a of list.slice(0, 6)) {
    kids.push(el('div', null, (a.live ? a.state : 'fired earlier') + ': ' + a.name + ' (' + a.severity +
      (a.action && a.action !== 'none' ? ', action ' + a.action : '') + ')'));
    if (a.summary) kids.push(el('div', { cls: 'ev', text: a.summary }));
    if (a.evidence) kids.push(el('div', { cls: 'ev', text: a.evidence }));
  }
  tip.replaceChildren(...kids);
  tip.hidden = false;
  const left = Math.min(x + 14, Math.max(0, rect.width - 440));
  tip.style.left = left + 'px';
  tip.style.top = (y + 16) + 'px';
}

function onGridClick(ev) {
  const rect = $('grid').getBoundingClientRect();
  const h = hitTest(ev.clientX - rect.left, ev.clientY - rect.top);
  if (!h || h.gpu === null) return;
  S.sel = h;
  drawGrid();
  loadCharts();
}

/* ---- charts (canvas) ---- */

function fmt(v) {
  if (!isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toFixed(1) + 'G';
  if (a >= 1e6) return (v / 1e6).toFixed(1) + 'M';
  if (a >= 1e4) return (v / 1e3).toFixed(1) + 'k';
  if (a >= 100 || v === Math.round(v)) return String(Math.round(v));
  return v.toPrecision(3);
}

function hhmm(t) {
  const d = new Date(t * 1000);
  return String(d.getHours()).padStart(2, '0') + ':' + String(d.getMinutes()).padStart(2, '0');
}

/* series: [{points: [[t, v], ...], color}], drawn over [t0, t1]. */
function drawLines(cv, series, t0, t1) {
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(100, cv.clientWidth), h = Math.max(60, cv.clientHeight);
  cv.width = Math.round(w * dpr);
  cv.height = Math.round(h * dpr);
  const ctx = cv.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  let lo = Infinity, hi = -Infinity;
  for (const s of series)
    for (const p of s.points)
      if (isFinite(p[1])) {
        if (p[1] < lo) lo = p[1];
        if (p[1] > hi) hi = p[1];
      }
  ctx.font = '10px system-ui, sans-serif';
  ctx.fillStyle = '#8b96a3';
  const left = 40, right = 6, top = 6, bottom = 14;
  if (lo === Infinity) {
    ctx.fillText('no data', left, h / 2);
    return;
  }
  if (hi === lo) {
    hi += 1;
    lo -= lo === 0 ? 0 : 1;
  }
  const X = (t) => left + (t - t0) / (t1 - t0) * (w - left - right);
  const Y = (v) => top + (hi - v) / (hi - lo) * (h - top - bottom);
  ctx.strokeStyle = '#2f3640';
  ctx.lineWidth = 1;
  ctx.strokeRect(left + 0.5, top + 0.5, w - left - right, h - top - bottom);
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'right';
  ctx.fillText(fmt(hi), left - 3, top + 4);
  ctx.fillText(fmt(lo), left - 3, h - bottom - 3);
  ctx.textBaseline = 'top';
  ctx.textAlign = 'left';
  ctx.fillText(hhmm(t0), left, h - bottom + 2);
  ctx.textAlign = 'right';
  ctx.fillText(hhmm(t1), w - right, h - bottom + 2);
  ctx.lineWidth = 1.5;
  for (const s of series) {
    ctx.strokeStyle = s.color;
    ctx.beginPath();
    let pen = false, prev = -Infinity;
    for (const p of s.points) {
      const gapped = p[0] - prev > 3 * s.step;
      prev = p[0];
      if (!isFinite(p[1])) {
        pen = false;
        continue;
      }
      if (!pen || gapped) ctx.moveTo(X(p[0]), Y(p[1]));
      else ctx.lineTo(X(p[0]), Y(p[1]));
      pen = true;
    }
    ctx.stroke();
  }
}

function toPoints(values) {
  return values.map((p) => [p[0], parseFloat(p[1])]);
}

async function loadCharts() {
  const sel = S.sel;
  if (!sel) return;
  const label = S.nodeLabel.get(sel.node) || 'hostname';
  const matcher = label + '="' + sel.node.replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '",gpu="' + sel.gpu + '"';
  $('gpu-title').textContent = 'GPU charts: ' + sel.node + ' GPU ' + sel.gpu + ' (last hour)';
  const box = $('charts');
  if (box.dataset.sel !== sel.node + '/' + sel.gpu) {
    box.replaceChildren(...CHARTS.map((c, i) => el('div', { cls: 'chart' },
      el('h3', { id: 'ch-t' + i, text: c.title }), el('canvas', { id: 'ch-' + i }))));
    box.dataset.sel = sel.node + '/' + sel.gpu;
  }
  const end = Math.floor(nowSec()), start = end - 3600, step = 30;
  await Promise.all(CHARTS.map(async (c, i) => {
    let data;
    try {
      data = await api('query_range', { query: c.expr.split('@SEL').join(matcher), start, end, step });
    } catch (e) {
      return;
    }
    if (S.sel !== sel) return;
    const pts = data.result.length ? toPoints(data.result[0].values) : [];
    const last = pts.length ? pts[pts.length - 1][1] : NaN;
    const t = $('ch-t' + i);
    t.replaceChildren(c.title + ' ', el('b', { text: pts.length ? fmt(last) + (c.unit ? ' ' + c.unit : '') : '–' }));
    drawLines($('ch-' + i), [{ points: pts, color: PALETTE[0], step }], start, end);
  }));
  $('charts').dataset.loaded = sel.node + '/' + sel.gpu;
}

/* ---- tables ---- */

function sevSpan(s) {
  const st = RANK[s] !== undefined ? s : 'warning';
  return el('span', { cls: 'sev st-' + st, text: s || '?' });
}

function ago(iso) {
  const t = Date.parse(iso);
  if (!isFinite(t)) return iso || '';
  const s = Math.round((Date.now() - t) / 1000);
  if (s < 90) return s + ' s ago';
  if (s < 5400) return Math.round(s / 60) + ' min ago';
  if (s < 172800) return (s / 3600).toFixed(1) + ' h ago';
  return Math.round(s / 86400) + ' d ago';
}

function renderAlerts(raw) {
  const rows = raw.slice().sort((a, b) =>
    (RANK[b.labels.severity] || 0) - (RANK[a.labels.severity] || 0) ||
    (a.state === b.state ? 0 : a.state === 'firing' ? -1 : 1) ||
    String(b.activeAt).localeCompare(String(a.activeAt)));
  const tb = $('alerts-body');
  const frag = document.createDocumentFragment();
  for (const a of rows.slice(0, 200)) {
    const l = a.labels, an = a.annotations || {};
    const where = l.hostname ? l.hostname + (l.gpu !== undefined ? ' GPU ' + l.gpu : '') : '(cluster)';
    const tr = el('tr', { 'data-alert': l.alertname, 'data-node': l.hostname || '', 'data-gpu': l.gpu || '' },
      el('td', null, sevSpan(l.severity), a.state === 'pending' ? ' pending' : ''),
      el('td', { text: l.alertname + (l.xid ? ' (XID ' + l.xid + ')' : '') + (l.cause ? ' (' + l.cause + ')' : '') }),
      el('td', { text: where }),
      el('td', { cls: 'nw', text: l.action || '' }),
      el('td', { cls: 'nw', text: ago(a.activeAt), title: a.activeAt }),
      el('td', { cls: 'ev', text: (an.summary ? an.summary + '. ' : '') + (an.evidence || '') }));
    frag.append(tr);
  }
  if (!rows.length) frag.append(el('tr', null, el('td', { colspan: '6', cls: 'empty', text: 'no pending or firing alert' })));
  tb.replaceChildren(frag);
  $('alerts-count').textContent = rows.length > 200 ? '(200 of ' + rows.length + ')' : '(' + rows.length + ')';
}

function renderExclusions(d) {
  const tb = $('excl-body');
  const list = (d && d.exclusions) || [];
  const frag = document.createDocumentFragment();
  for (const e of list)
    frag.append(el('tr', { 'data-node': e.node },
      el('td', { text: e.node }), el('td', { cls: 'nw', text: e.since ? ago(e.since) : '', title: e.since || '' }),
      el('td', { cls: 'nw', text: e.action || '' }), el('td', { cls: 'ev', text: e.reason || '' })));
  if (!list.length) frag.append(el('tr', null, el('td', { colspan: '4', cls: 'empty', text: 'none' })));
  tb.replaceChildren(frag);
  $('excl-count').textContent = '(' + list.length + ')';
}

function renderCheckpoints(list) {
  const rows = (list || []).slice().sort((a, b) => b.start - a.start).slice(0, 8);
  const frag = document.createDocumentFragment();
  for (const c of rows) {
    const diag = c.diagnosis + (c.remedy ? ': ' + c.remedy : '');
    frag.append(el('tr', { 'data-diagnosis': c.diagnosis },
      el('td', { text: ago(new Date(c.start * 1000).toISOString()), title: new Date(c.start * 1000).toISOString() }),
      el('td', { text: c.phase }),
      el('td', { text: c.duration_seconds !== null && c.duration_seconds !== undefined ? c.duration_seconds + ' s' : '' }),
      el('td', { text: fmt(c.bytes / 1e9) + ' GB' }),
      el('td', { text: String(c.nodes) }),
      el('td', { text: c.link_utilisation !== null && c.link_utilisation !== undefined ?
        Math.round(c.link_utilisation * 100) + ' %' : '' }),
      el('td', { cls: c.diagnosis === 'healthy' ? '' : 'ev', text: diag })));
  }
  if (!rows.length) frag.append(el('tr', null, el('td', { colspan: '7', cls: 'empty', text: 'no checkpoint seen yet' })));
  $('ckpt-body').replaceChildren(frag);
}

/* ---- refresh ---- */

function alertRecord(a, live) {
  const l = a.labels || a.metric || {};
  return { node: l.hostname, gpu: l.gpu === undefined ? null : l.gpu, severity: l.severity, name: l.alertname,
    action: l.action, state: live ? a.state : 'resolved', live,
    summary: a.annotations ? a.annotations.summary : '', evidence: a.annotations ? a.annotations.evidence : '' };
}

async function refresh() {
  if (S.busy) return;
  S.busy = true;
  try {
    const inv = S.synthetic ? Promise.resolve({ result: S.synthetic })
      : api('query', { query: 'group by (hostname, Hostname, instance, gpu) (last_over_time(DCGM_FI_DEV_GPU_TEMP[15m]))' });
    const recentQ = 'max by (hostname, gpu, alertname, severity, action) (max_over_time(ALERTS{alertstate="firing"}[' +
      S.window + ']))';
    const [invD, alertsD, recentD, ckptD, exclD] = await Promise.all([
      inv, api('alerts'), api('query', { query: recentQ }), api('checkpoints'), api('exclusions')]);
    const live = alertsD.alerts.filter((a) => a.labels && a.labels.hostname).map((a) => alertRecord(a, true));
    let recent = recentD.result.filter((s) => s.metric.hostname).map((s) => alertRecord(s, false));
    if (S.synthetic) {
      const n = S.synthetic.length / S.synthGpus;
      live.push(...syntheticAlerts(n, S.synthGpus).map((a) => Object.assign(a, { live: true })));
      recent = [];
    }
    S.live = alertsD.alerts;
    S.excluded = new Map(((exclD && exclD.exclusions) || []).map((e) => [e.node, e]));
    buildFleet(invD.result, live.concat(recent).map((a) => a.node));
    applyAlerts(live, recent);
    drawGrid();
    updateSickList();
    renderAlerts(alertsD.alerts);
    renderCheckpoints(ckptD);
    renderExclusions(exclD);
    if (S.sel) await loadCharts();
    $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
    document.body.dataset.refreshes = String(+document.body.dataset.refreshes + 1);
    document.body.dataset.state = 'ready';
  } catch (e) {
    $('updated').textContent = 'update failed: ' + e.message;
    if (document.body.dataset.state === 'loading') document.body.dataset.state = 'error';
  } finally {
    S.busy = false;
  }
}

/* ---- query box ---- */

async function runQuery(ev) {
  ev.preventDefault();
  const q = $('q').value.trim();
  const out = $('qout');
  if (!q) return;
  out.replaceChildren(el('span', { cls: 'empty', text: 'running…' }));
  try {
    if ($('qrange').checked) {
      const end = Math.floor(nowSec()), start = end - 3600, step = 15;
      const d = await api('query_range', { query: q, start, end, step }, false);
      const series = d.result.slice(0, PALETTE.length).map((s, i) =>
        ({ points: toPoints(s.values), color: PALETTE[i], step, name: labelText(s.metric) }));
      const cv = el('canvas');
      const leg = el('div', { cls: 'legend2' });
      for (const s of series) {
        const i = el('i');
        i.style.setProperty('--c', s.color);
        leg.append(el('span', null, i, s.name));
      }
      out.replaceChildren(cv, leg, el('div', { cls: 'empty', text: d.result.length + ' series' +
        (d.result.length > series.length ? ' (first ' + series.length + ' drawn)' : '') }));
      drawLines(cv, series, start, end);
    } else {
      const d = await api('query', { query: q }, false);
      out.replaceChildren(resultTable(d));
    }
  } catch (e) {
    out.replaceChildren(el('div', { cls: 'err', text: e.message }));
  }
}

function labelText(m) {
  const name = m.__name__ || '';
  const rest = Object.keys(m).filter((k) => k !== '__name__').sort().map((k) => k + '="' + m[k] + '"');
  return name + (rest.length || !name ? '{' + rest.join(', ') + '}' : '');
}

function resultTable(d) {
  if (d.resultType === 'scalar' || d.resultType === 'string')
    return el('div', null, el('code', { text: d.resultType + ': ' + d.result[1] }));
  const t = el('table', null, el('thead', null, el('tr', null, el('th', { text: 'series' }), el('th', { text: 'value' }))));
  const tb = el('tbody');
  for (const s of d.result.slice(0, 500)) {
    const v = d.resultType === 'matrix' ? s.values.length + ' samples, last ' + s.values[s.values.length - 1][1]
      : s.value[1];
    tb.append(el('tr', null, el('td', null, el('code', { text: labelText(s.metric) })), el('td', { text: v })));
  }
  if (!d.result.length) tb.append(el('tr', null, el('td', { colspan: '2', cls: 'empty', text: 'empty result' })));
  t.append(tb);
  const box = el('div', null, t);
  if (d.result.length > 500) box.append(el('div', { cls: 'empty', text: 'first 500 of ' + d.result.length + ' series' }));
  return box;
}

/* ---- start ---- */

function init() {
  const leg = $('legend');
  const names = { ok: 'healthy', recent: 'alert in the window, resolved', info: 'info', pending: 'pending',
    warning: 'warning', critical: 'critical' };
  for (const s of STATES) leg.append(el('span', { cls: 'st-' + s, text: names[s] }));
  $('window').value = S.window;
  $('window').addEventListener('change', () => {
    S.window = $('window').value;
    refresh();
  });
  const synth = syntheticFleet(params.get('synthetic'));
  if (synth) {
    S.synthetic = synth;
    S.synthGpus = +/x(\d+)$/.exec(params.get('synthetic'))[1];
  }
  const g = /^(.+)\/(\d+)$/.exec(params.get('gpu') || '');
  if (g) S.sel = { node: g[1], gpu: +g[2] };
  const cv = $('grid');
  cv.addEventListener('mousemove', showTip);
  cv.addEventListener('mouseleave', () => { $('tip').hidden = true; });
  cv.addEventListener('click', onGridClick);
  $('qform').addEventListener('submit', runQuery);
  let rt = 0;
  window.addEventListener('resize', () => {
    clearTimeout(rt);
    rt = setTimeout(drawGrid, 100);
  });
  refresh();
  S.timer = setInterval(refresh, REFRESH_MS);
}

document.addEventListener('DOMContentLoaded', init);
