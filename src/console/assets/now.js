// The "Now" panel (GET /admin/status): each light says what is so; an in-process store or an
// embedded ledger is a warning naming its limit, never a green light.
import { refusalsView } from '/console/trends.js';
import { h, time } from '/console/views.js';

const $ = (id) => document.getElementById(id);

export function mark(id, text, kind) {
  $(id).replaceChildren(kind ? h('span', { className: kind }, text) : text);
}

export function renderNow(status) {
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
  // An in-process store is not a green light: it holds for one replica only.
  if (redis.mode === 'memory') mark('now-redis', 'none: in-process store, fit for one replica only', 'warn');
  else
    mark(
      'now-redis',
      `${redis.reachable ? 'reachable' : 'unreachable'} (${redis.mode})`,
      redis.reachable ? 'good' : 'bad',
    );
  if (ledger === null) {
    mark('now-postgres', 'not configured');
    mark('now-queue', 'not configured');
  } else {
    const embedded = ledger.database === 'embedded';
    mark(
      'now-postgres',
      `${ledger.databaseReachable ? 'reachable' : 'unreachable'} (${embedded ? 'embedded PGlite: one replica only' : ledger.database})`,
      !ledger.databaseReachable ? 'bad' : embedded ? 'warn' : 'good',
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
  $('refusals-view').replaceChildren(refusalsView(status.refusals) ?? '');
}
