// The operators' console (docs/operations.md, "The console"): plain ES modules, no build step.
import { ApiError, getJson, keyStore, streamLedger } from '/console/api.js';
import { allowReconciliation, dryRun, loadActions } from '/console/reconcile.js';
import { addDays, dayOf, display, zone } from '/console/format.js';
import { applyList, setOperations, setUpList, startOf } from '/console/list.js';
import { budgetsView, clientsView, companyView, priceNote } from '/console/spend.js';
import { dayView, errorsChart, lastDays, latestTroubledDay, refusalsChart, spendChart } from '/console/trends.js';
import { renderNow } from '/console/now.js';
import { setUpAccess, showWho } from '/console/access.js';
import { loadParked } from '/console/parked.js';
import { forgetSession } from '/console/sign-in.js';
import { entriesView, note } from '/console/views.js';
import { loadWebhooks } from '/console/webhooks.js';

const $ = (id) => document.getElementById(id);
const NOW_EVERY_MS = 5000;

/** Which administration routes this build serves (GET /admin/status `routes`). */
let routes = {};
let nowTimer = null;
let trends = null;
let lastStatus = null;
const today = () => dayOf(Date.now());
const showIn = (container, ...content) => $(container).replaceChildren(...content);

function setKeyMessage(text, isError = false) {
  $('key-message').textContent = text;
  $('key-message').className = isError ? 'error' : '';
}

/** A failed call shown where its figures would be; a refused key also ends the session's key. */
function failed(container, error) {
  if (!(error instanceof ApiError)) throw error;
  if (error.status === 401) signOut(error.message, true);
  showIn(container, note(error.message, 'error'));
}

const absent = (route) => note(`Not available in this build of the gateway (${route} is not served).`);

// ---- Now

function showNow(status) {
  routes = status.routes;
  lastStatus = status;
  setOperations(status.operations);
  renderNow(status);
}
const loadNow = async () => showNow(await getJson('/admin/status'));
const refreshNowQuietly = () => loadNow().catch((error) => failed('now-message', error));

// ---- Money, trends, parked entries

/** The forecast first: it says the zone, the calendar and the price every other view is written in. */
async function loadMoney() {
  if (!routes.forecast) return showIn('budgets', absent('GET /admin/forecast'));
  try {
    delete $('clients').dataset.savings;
    const forecast = await getJson('/admin/forecast');
    display.budgetZone = forecast.timeZone;
    display.calendar = forecast.calendar;
    display.price = forecast.unitPrice ? { amount: forecast.unitPrice, currency: forecast.currency } : null;
    $('tomans-choice').hidden = display.price?.currency !== 'IRR';
    $('zone-note').textContent =
      `Times in ${zone()}${display.calendar === 'persian' && !display.utc ? ', Persian calendar' : ''}.`;
    // Nothing to switch to where the budgets' zone is UTC already (a checkbox that reads as broken).
    [$('utc-choice').hidden, $('utc-instead').textContent] = [display.budgetZone === 'UTC', display.budgetZone];
    showIn('price-note', priceNote());
    showIn('company-view', companyView(forecast));
    showIn('clients', clientsView(forecast, []));
    showIn('budgets', budgetsView(forecast));
    void loadSavings(forecast);
  } catch (error) {
    failed('budgets', error);
  }
}

/**
 * Money spent and reuse savings over exactly this budget month, and (with a price: else no money)
 * spent over exactly the forecast's last 7 days, checkedAt − rateDays to checkedAt as its
 * `lastDaysUnits` (GET /admin/usage: each inquiry at the unit price it recorded); the company's
 * month and the table drawn again with them; savings where the answer has `unitsSaved` (a
 * missing field shows nothing); `data-savings` says the answers are in (the bench waits for it).
 */
async function loadSavings(forecast) {
  if (!routes.usage) return;
  try {
    const to = forecast.checkedAt;
    const lastDays = new Date(Date.parse(to) - forecast.rateDays * 86_400_000).toISOString();
    const read = (from) => getJson(`/admin/usage?${new URLSearchParams({ from, to, period: 'month' })}`);
    // The 7 days' money is an extra: a failure leaves them in units (a 401 still asks for the key).
    const unitsOnly = (error) => {
      if (!(error instanceof ApiError) || error.status === 401) throw error;
    };
    const [month, recent] = await Promise.all([
      read(forecast.company.startsAt),
      display.price ? read(lastDays).catch(unitsOnly) : undefined,
    ]);
    // Money spent and saved, at the prices recorded (the forecast reckons in units).
    showIn('company-view', companyView(forecast, month.usage ?? []));
    showIn('clients', clientsView(forecast, month.usage ?? [], recent?.usage ?? []));
    $('clients').dataset.savings = 'read';
  } catch (error) {
    failed('clients', error);
  }
}

/**
 * Asked at once with the forecast (it needs no zone from it): the last 31 × 24 h and a day ahead,
 * by day in BUDGET_TIMEZONE (the gateway's default) or UTC; drawTrends picks the 30 days shown.
 */
async function loadTrends() {
  if (!routes.trends) return showIn('spend-trend', absent('GET /admin/trends'));
  try {
    const now = Date.now();
    const range = { from: new Date(now - 31 * 86_400_000).toISOString(), to: new Date(now + 86_400_000).toISOString() };
    trends = await getJson(
      `/admin/trends?${new URLSearchParams({ ...range, ...(display.utc ? { timeZone: 'UTC' } : {}) })}`,
    );
  } catch (error) {
    trends = null;
    failed('spend-trend', error);
  }
}

function drawTrends() {
  if (!trends) return;
  const days = lastDays(today());
  showIn('spend-trend', spendChart(trends, days, $('trend-measure').value));
  showIn('errors-trend', errorsChart(trends, days));
  showIn('refusals-trend', refusalsChart(trends, days));
  const day = $('trend-day').value || latestTroubledDay(trends, days);
  $('trend-day').value = day;
  showIn('day-detail', dayView(trends, day));
}

let datesSet = false;
async function loadAll() {
  // The forecast says the zone the rest is written in; the trends, parked entries and deliveries need none.
  await Promise.all([loadMoney(), loadTrends(), loadParked(routes, failed), loadWebhooks(lastStatus, failed)]);
  // "Now" was drawn before the zone was known: again, in it.
  if (lastStatus) showNow(lastStatus);
  drawTrends();
  // The default periods in the budget's zone, known once the forecast has said which it is.
  if (!datesSet) {
    datesSet = true;
    setUpList({ onOpen: openAndFocus, onError: failed, today: today() });
    $('inquiry-from').value = addDays(today(), -29);
  }
  await (routes.inquiries ? applyList() : showIn('list-result', absent('GET /admin/inquiries')));
}

// ---- One inquiry

async function openInquiry(trackId, fromDay) {
  if (!routes.ledger) return showIn('inquiry-result', absent('GET /admin/ledger'));
  showIn('inquiry-result', note(`Looking for ${trackId}…`));
  try {
    const entries = [];
    // The server picks the inquiry's entries (`trackId`, docs/api.md §7): a few lines stream, not the period.
    const query = { from: startOf(fromDay), to: startOf(addDays(today(), 1)), trackId };
    await streamLedger(query, (entry) => void entries.push(entry));
    showIn('inquiry-result', entriesView(trackId, entries));
  } catch (error) {
    failed('inquiry-result', error);
  }
}

const openAndFocus = (trackId, day) => void openInquiry(trackId, day).then(() => $('inquiry-result').focus());

function findInquiry(event) {
  event.preventDefault();
  void openInquiry($('track-id').value.trim().toLowerCase(), $('inquiry-from').value);
}

// ---- Reconciliation

function sendReconciliation(event) {
  event.preventDefault();
  const [file] = $('reconcile-file').files;
  if (!routes.reconciliations) return showIn('reconcile-result', absent('POST /admin/reconciliations'));
  if (!file) return showIn('reconcile-result', note('Choose the provider’s CSV file first.', 'error'));
  void dryRun(file, failed);
}

// ---- The key

function setSignedIn(signedIn) {
  $('forget-key').hidden = !signedIn;
  $('display').hidden = !signedIn;
  $('now-refresh').disabled = !signedIn;
  $('money-refresh').disabled = !signedIn;
  clearInterval(nowTimer);
  nowTimer = signedIn ? setInterval(refreshNowQuietly, NOW_EVERY_MS) : null;
}

function signOut(message, isError = false) {
  keyStore.clear();
  forgetSession();
  showWho();
  setSignedIn(false);
  setKeyMessage(message, isError);
  $('now-facts').hidden = $('webhooks').hidden = true;
}

async function start() {
  try {
    await loadNow();
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    if (error.status === 401 || error.status === 403) {
      signOut(error.status === 401 ? error.message : 'This credential lacks the scope ledger:read.', true);
    } else setKeyMessage(error.message, true);
    return;
  }
  setSignedIn(true);
  setKeyMessage(keyStore.get() ? 'Key accepted; kept in this tab only, until it closes.' : '');
  allowReconciliation((await getJson('/admin/me').catch(() => ({ scopes: [] }))).scopes);
  if (routes.operatorActions) void loadActions(failed);
  await loadAll();
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
$('money-refresh').addEventListener('click', () => void loadAll());
$('webhooks-refresh').addEventListener('click', () => void loadWebhooks(lastStatus, failed));
$('trend-measure').addEventListener('change', drawTrends);
$('trend-day').addEventListener('change', drawTrends);
$('inquiry-form').addEventListener('submit', findInquiry);
$('reconcile-form').addEventListener('submit', sendReconciliation);
$('show-utc').addEventListener('change', () => {
  display.utc = $('show-utc').checked;
  $('trend-day').value = '';
  if (lastStatus) showNow(lastStatus);
  void loadAll();
});
$('show-tomans').addEventListener('change', () => {
  display.tomans = $('show-tomans').checked;
  void loadAll();
});
$('quick-unknown').addEventListener(
  'click',
  () => void applyList({ status: 'unknown', from: addDays(today(), -29), to: today() }),
);
$('quick-failed').addEventListener(
  'click',
  () => void applyList({ status: 'failed', from: addDays(today(), -1), to: addDays(today(), -1) }),
);
$('list-form').addEventListener('submit', (event) => {
  event.preventDefault();
  void applyList();
});
void setUpAccess(start, signOut, setKeyMessage);
