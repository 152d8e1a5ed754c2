// The operators' console (docs/operations.md, "The console"): plain ES modules, no build step.
import uPlot from '/console/vendor/uplot.js';
import { ApiError, getJson, keyStore, reconcile, streamLedger } from '/console/api.js';
import { budgetsView, entriesView, h, note, reportView, time, unknownsView, usageRows } from '/console/views.js';

const $ = (id) => document.getElementById(id);
const NOW_EVERY_MS = 5000;
const DAY_MS = 86_400_000;
const UNKNOWNS_SHOWN = 50;
/** Series colours with at least 3:1 contrast on white (WCAG 1.4.11). */
const COLOURS = [
  '#0b57d0',
  '#b3261e',
  '#146c2e',
  '#7d3c98',
  '#8a5300',
  '#00677f',
  '#b0006d',
  '#3d4f5c',
  '#5b6300',
  '#6e3a1f',
];

/** Which administration routes this build serves (GET /admin/status `routes`). */
let routes = { ledger: false, usage: false, budgets: false, reconciliations: false };
let nowTimer = null;
let usage = [];
let chart = null;

const isoDay = (ms) => new Date(ms).toISOString().slice(0, 10);
const today = () => Date.parse(`${isoDay(Date.now())}T00:00:00Z`);

function setKeyMessage(text, isError = false) {
  $('key-message').textContent = text;
  $('key-message').className = isError ? 'error' : '';
}

function showIn(container, ...content) {
  $(container).replaceChildren(...content);
}

/** A failed call shown where its figures would be; a refused key also ends the session's key. */
function failed(container, error) {
  if (!(error instanceof ApiError)) throw error;
  if (error.status === 401) signOut('The gateway did not accept this key: check it and enter it again.', true);
  showIn(container, note(error.message, 'error'));
}

function absent(route) {
  return note(`Not available in this build of the gateway (${route} is not served).`);
}

// ---- Now

function mark(id, text, kind) {
  $(id).replaceChildren(kind ? h('span', { className: kind }, text) : text);
}

function renderNow(status) {
  routes = status.routes;
  const { token, circuit, redis, ledger, build } = status;
  mark('now-token-state', token.state, token.state === 'valid' ? 'good' : 'bad');
  $('now-token-valid').replaceChildren(time(token.validUntil));
  $('now-token-renewed').replaceChildren(time(token.renewedAt));
  const reasons = Object.entries(token.renewalFailuresByReason)
    .filter(([, count]) => count > 0)
    .map(([reason, count]) => `${reason} ${count}`)
    .join(', ');
  mark(
    'now-token-failures',
    reasons ? `${token.renewalFailures} (${reasons})` : String(token.renewalFailures),
    token.renewalFailures > 0 ? 'warn' : undefined,
  );
  mark('now-circuit', circuit.state, circuit.state === 'closed' ? 'good' : 'bad');
  mark(
    'now-redis',
    `${redis.reachable ? 'reachable' : 'unreachable'} (${redis.mode})`,
    redis.reachable ? 'good' : 'bad',
  );
  if (ledger === null) {
    mark('now-postgres', 'not configured');
    mark('now-queue', 'not configured');
  } else {
    mark(
      'now-postgres',
      `${ledger.databaseReachable ? 'reachable' : 'unreachable'} (${ledger.database})`,
      ledger.databaseReachable ? 'good' : 'bad',
    );
    mark(
      'now-queue',
      ledger.queueDepth === null ? 'unknown' : `${ledger.queueDepth} waiting, oldest ${ledger.queueOldestAgeSeconds} s`,
      ledger.queueDepth ? 'warn' : undefined,
    );
  }
  mark('now-held', String(status.heldLongPolls));
  mark('now-build', `${build.version} (${build.commit})`);
  $('now-facts').hidden = false;
  $('now-message').replaceChildren('Checked at ', time(status.checkedAt), ' (this replica; refreshed every 5 s).');
}

async function loadNow() {
  const status = await getJson('/admin/status');
  renderNow(status);
  return status;
}

function refreshNowQuietly() {
  loadNow().catch((error) => failed('now-message', error));
}

// ---- Money

async function loadBudgets() {
  if (!routes.budgets) return showIn('budgets', absent('GET /admin/budgets'));
  try {
    showIn('budgets', budgetsView(await getJson('/admin/budgets')));
  } catch (error) {
    failed('budgets', error);
  }
}

function drawUsage() {
  const container = $('usage');
  if (chart) chart.destroy();
  chart = null;
  const measure = $('usage-measure').value;
  const days = Array.from({ length: 30 }, (_, i) => today() - (29 - i) * DAY_MS);
  const clients = [...new Set(usage.map((row) => row.clientId))].sort();
  if (clients.length === 0) return showIn('usage', note('No inquiries in the last 30 days.'));
  const index = new Map(days.map((day, i) => [isoDay(day), i]));
  const series = clients.map(() => new Array(days.length).fill(0));
  const totals = clients.map(() => 0);
  for (const row of usage) {
    const i = index.get(row.day);
    const c = clients.indexOf(row.clientId);
    if (i === undefined || c < 0) continue;
    series[c][i] += row[measure];
    totals[c] += row[measure];
  }
  const plot = h('div', {
    className: 'chart',
    role: 'img',
    'aria-label': `${measure} per day and client, last 30 days`,
  });
  const legend = h(
    'ul',
    { className: 'legend', 'aria-label': `Totals of ${measure} over 30 days` },
    clients.map((client, c) => {
      const swatch = h('span', { className: 'swatch', 'aria-hidden': 'true' });
      swatch.style.background = COLOURS[c % COLOURS.length];
      return h('li', {}, swatch, `${client}: ${totals[c].toLocaleString()}`);
    }),
  );
  container.replaceChildren(plot, legend);
  chart = new uPlot(
    {
      width: Math.max(240, plot.clientWidth),
      height: 220,
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true } },
      series: [{}, ...clients.map((client, c) => ({ label: client, stroke: COLOURS[c % COLOURS.length], width: 2 }))],
      axes: [{}, { size: 50 }],
    },
    [days.map((day) => day / 1000), ...series],
    plot,
  );
}

async function loadUsage() {
  if (!routes.usage) return showIn('usage', absent('GET /admin/usage'));
  try {
    const from = isoDay(today() - 29 * DAY_MS);
    const to = isoDay(today() + DAY_MS);
    usage = usageRows(await getJson(`/admin/usage?${new URLSearchParams({ from, to, period: 'day' })}`));
    drawUsage();
  } catch (error) {
    failed('usage', error);
  }
}

async function loadUnknowns() {
  if (!routes.ledger) return showIn('unknowns', absent('GET /admin/ledger'));
  try {
    const entries = [];
    let total = 0;
    const query = { from: isoDay(today() - 29 * DAY_MS), to: isoDay(today() + DAY_MS), status: 'unknown' };
    await streamLedger(query, (entry) => {
      total += 1;
      if (entries.length < UNKNOWNS_SHOWN) entries.push(entry);
    });
    const counts = new Map();
    for (const row of usage) counts.set(row.clientId, (counts.get(row.clientId) ?? 0) + row.unknown);
    showIn('unknowns', unknownsView(counts, entries, total));
  } catch (error) {
    failed('unknowns', error);
  }
}

async function loadMoney() {
  // The unknowns' counts come from the usage rows: those first.
  await Promise.all([loadBudgets(), loadUsage()]);
  await loadUnknowns();
}

// ---- One inquiry

async function findInquiry(event) {
  event.preventDefault();
  const trackId = $('track-id').value.trim().toLowerCase();
  if (!routes.ledger) return showIn('inquiry-result', absent('GET /admin/ledger'));
  showIn('inquiry-result', note(`Looking for ${trackId}…`));
  try {
    const entries = [];
    // The server picks the inquiry's entries (`trackId`, docs/api.md §7): a few lines stream, not the period.
    const query = { from: $('inquiry-from').value, to: isoDay(today() + DAY_MS), trackId };
    await streamLedger(query, (entry) => void entries.push(entry));
    showIn('inquiry-result', entriesView(trackId, entries));
  } catch (error) {
    failed('inquiry-result', error);
  }
}

// ---- Reconciliation

async function sendReconciliation(event) {
  event.preventDefault();
  const [file] = $('reconcile-file').files;
  if (!routes.reconciliations) return showIn('reconcile-result', absent('POST /admin/reconciliations'));
  if (!file) return showIn('reconcile-result', note('Choose the provider’s CSV file first.', 'error'));
  showIn('reconcile-result', note(`Sending ${file.name}…`));
  try {
    const report = await reconcile(file);
    showIn('reconcile-result', reportView(report, new Date().toISOString()));
  } catch (error) {
    failed('reconcile-result', error);
  }
}

// ---- The key

function setSignedIn(signedIn) {
  $('forget-key').hidden = !signedIn;
  $('now-refresh').disabled = !signedIn;
  $('money-refresh').disabled = !signedIn;
  clearInterval(nowTimer);
  nowTimer = signedIn ? setInterval(refreshNowQuietly, NOW_EVERY_MS) : null;
}

function signOut(message, isError = false) {
  keyStore.clear();
  setSignedIn(false);
  setKeyMessage(message, isError);
  $('now-facts').hidden = true;
}

async function start() {
  try {
    await loadNow();
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    if (error.status === 401 || error.status === 403) {
      signOut(
        error.status === 401
          ? error.message
          : 'This key is valid but lacks the scope ledger:read: ask for an admin key.',
        true,
      );
    } else setKeyMessage(error.message, true);
    return;
  }
  setSignedIn(true);
  setKeyMessage('Key accepted; kept in this tab only, until it closes.');
  await loadMoney();
}

$('key-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = $('api-key');
  const key = input.value.trim();
  input.value = '';
  if (!key) return;
  keyStore.set(key);
  void start();
});
$('forget-key').addEventListener('click', () => signOut('Key forgotten.'));
$('now-refresh').addEventListener('click', refreshNowQuietly);
$('money-refresh').addEventListener('click', () => void loadMoney());
$('usage-measure').addEventListener('change', drawUsage);
$('inquiry-form').addEventListener('submit', (event) => void findInquiry(event));
$('reconcile-form').addEventListener('submit', (event) => void sendReconciliation(event));
window.addEventListener('resize', () => {
  if (chart) chart.setSize({ width: Math.max(240, chart.root.parentElement.clientWidth), height: 220 });
});

$('inquiry-from').value = isoDay(today() - 29 * DAY_MS);
if (keyStore.get()) void start();
