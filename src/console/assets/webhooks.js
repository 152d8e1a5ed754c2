// The "Webhook deliveries" panel (docs/api.md §9): deliveries failing and dead, from
// GET /admin/webhooks/deliveries, with a retry per dead one (POST …/{id}/retry) when the key
// holds ledger:reconcile. The event's own fields only: a delivery carries no personal data.
import { ApiError, getJson, postJson } from '/console/api.js';
import { h, note, table, time } from '/console/views.js';

const $ = (id) => document.getElementById(id);
const READ_SCOPE = 'ledger:read';
const RETRY_SCOPE = 'ledger:reconcile';

/** What an event is about: its trackId, else its fields as `name value`. */
function subject(data) {
  if (typeof data?.trackId === 'string') return h('code', {}, data.trackId);
  return Object.entries(data ?? {})
    .map(([name, value]) => `${name} ${value}`)
    .join(', ');
}

const lastAnswer = (delivery) =>
  delivery.lastStatus !== null ? `HTTP ${delivery.lastStatus}` : (delivery.lastError ?? '–');

function rows(deliveries, retryCell) {
  return deliveries.map((delivery) =>
    h(
      'tr',
      { 'data-delivery': delivery.id, 'data-endpoint': delivery.endpointId },
      h('td', {}, time(delivery.occurredAt)),
      h('td', {}, delivery.endpointId),
      h('td', {}, delivery.type),
      h('td', {}, subject(delivery.data)),
      h('td', { className: 'num' }, String(delivery.attempts)),
      h('td', {}, lastAnswer(delivery)),
      retryCell(delivery),
    ),
  );
}

const HEADINGS = ['occurred', 'endpoint', 'event', 'about', 'attempts', 'last answer'];

/** Loads both lists; `onError` is the page's (a 401 ends the session's key). */
export async function loadWebhooks(status, onError) {
  const scopes = status?.scopes ?? [];
  const shown = Boolean(status?.routes?.webhooks) && scopes.includes(READ_SCOPE);
  $('webhooks').hidden = !shown;
  if (!shown) return;
  const mayRetry = scopes.includes(RETRY_SCOPE);
  try {
    const [failing, dead] = await Promise.all(
      ['failing', 'dead'].map((state) => getJson(`/admin/webhooks/deliveries?status=${state}`)),
    );
    $('webhooks-failing').replaceChildren(
      failing.deliveries.length === 0
        ? note('No delivery is failing.', 'good')
        : table(
            [...HEADINGS, 'next attempt'],
            rows(failing.deliveries, (d) => h('td', {}, time(d.nextAttemptAt))),
            'Failing webhook deliveries',
          ),
    );
    $('webhooks-dead').replaceChildren(
      dead.deliveries.length === 0
        ? note('No dead delivery.', 'good')
        : h(
            'div',
            {},
            mayRetry ? null : note(`Sending one again needs a key with ${RETRY_SCOPE}.`),
            table(
              mayRetry ? [...HEADINGS, 'send again'] : HEADINGS,
              rows(dead.deliveries, (d) => (mayRetry ? h('td', {}, retryButton(d, status, onError)) : null)),
              'Dead webhook deliveries',
            ),
          ),
    );
  } catch (error) {
    onError('webhooks-message', error);
  }
}

function retryButton(delivery, status, onError) {
  const button = h(
    'button',
    { type: 'button', className: 'retry' },
    'Retry',
    // Each button named apart for a screen reader: the endpoint and the event's id.
    h('span', { className: 'visually-hidden' }, ` delivery ${delivery.id} to ${delivery.endpointId}`),
  );
  button.addEventListener('click', async () => {
    button.disabled = true;
    try {
      await postJson(`/admin/webhooks/deliveries/${encodeURIComponent(delivery.id)}/retry`);
      $('webhooks-message').textContent =
        `Delivery ${delivery.id} to ${delivery.endpointId} queued again (same webhook-id).`;
      await loadWebhooks(status, onError);
    } catch (error) {
      button.disabled = false;
      if (!(error instanceof ApiError)) throw error;
      onError('webhooks-message', error);
    }
  });
  return button;
}
