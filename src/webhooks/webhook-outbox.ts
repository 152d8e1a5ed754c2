import { createHash, randomUUID } from 'node:crypto';
import type { LedgerStore } from '../ledger/ledger.store.js';
import type { WebhookEndpoint } from '../config/webhooks-config.js';

/** One claimed delivery: what a worker sends, under its lease. */
export interface ClaimedDelivery {
  id: string;
  endpointId: string;
  type: string;
  data: Record<string, unknown>;
  occurredAt: Date;
  /** This attempt's number (1 = first). */
  attempt: number;
  retrySince: Date;
  leaseToken: string;
}

/** What an attempt ended in: delivered, dead, or pending again after `retryInMs`. */
export interface DeliveryOutcome {
  status: 'delivered' | 'dead' | 'pending';
  retryInMs?: number;
  httpStatus?: number;
  error?: string;
}

/** A delivery as GET /admin/webhooks/deliveries shows it (no body beyond the event's own fields). */
export interface DeliveryView {
  id: string;
  endpointId: string;
  type: string;
  status: 'pending' | 'delivered' | 'dead';
  attempts: number;
  occurredAt: string;
  nextAttemptAt: string | null;
  lastStatus: number | null;
  lastError: string | null;
  data: Record<string, unknown>;
}

interface DeliveryRow {
  id: string;
  endpoint_id: string;
  type: string;
  status: DeliveryView['status'];
  attempts: number;
  occurred_at: Date;
  next_attempt_at: Date;
  last_status: number | null;
  last_error: string | null;
  data: Record<string, unknown>;
}

/** An endpoint no replica has mirrored for this long is no longer written events (removed from every configuration). */
export const ENDPOINT_FORGET_MS = 120_000;

/** Rows a listing shows at most (newest first). */
export const LIST_ROWS = 500;

/**
 * The SHA-256 of an endpoint's configuration: a 410 disables the endpoint while it is unchanged
 * (docs/api.md §9). The keys are in it (a rotation is a change); a digest of a 24+ byte random
 * key reveals nothing of it.
 */
export function fingerprintOf(endpoint: WebhookEndpoint): string {
  const keys = endpoint.keys.map((key) => key.reveal());
  return createHash('sha256')
    .update(JSON.stringify([endpoint.clientId, endpoint.url.reveal(), endpoint.events, keys]))
    .digest('hex');
}

/**
 * The outbox in the ledger's PostgreSQL (tables of ledger migration 10): the endpoints mirrored
 * for its triggers, claims with FOR UPDATE SKIP LOCKED and a lease, each outcome written only
 * under the claim's lease token (a replica whose lease ran out writes nothing over another's).
 */
export class WebhookOutbox {
  constructor(private readonly store: LedgerStore) {}

  private async db() {
    await this.store.ready();
    return this.store.db;
  }

  /**
   * Mirrors this replica's endpoints for the triggers: at start, on each re-read (`configChanged`:
   * its subscriptions and fingerprints are written) and every few seconds as a heartbeat (only
   * kept alive). Replicas may hold different configurations (a rollout): an endpoint is forgotten
   * only once no replica has mirrored it for `forgetAfterMs`, so one replica never unsubscribes
   * another's (test/webhook-outbox.integration.spec.ts, "another replica configures").
   */
  async syncEndpoints(
    endpoints: readonly WebhookEndpoint[],
    { configChanged, forgetAfterMs = ENDPOINT_FORGET_MS }: { configChanged: boolean; forgetAfterMs?: number },
  ): Promise<void> {
    const rows = endpoints.map((e) => ({ id: e.id, c: e.clientId, e: e.events, f: fingerprintOf(e) }));
    await (
      await this.db()
    ).transaction(async (tx) => {
      await tx.query(
        `INSERT INTO webhook_endpoints AS ep (id, client_id, events, fingerprint)
         SELECT id, c, ARRAY(SELECT json_array_elements_text(e)), f FROM json_to_recordset($1::json) AS x(id text, c text, e json, f text)
         ON CONFLICT (id) DO UPDATE SET seen_at = now(),
           client_id = CASE WHEN $2 THEN excluded.client_id ELSE ep.client_id END,
           events = CASE WHEN $2 THEN excluded.events ELSE ep.events END,
           fingerprint = CASE WHEN $2 THEN excluded.fingerprint ELSE ep.fingerprint END`,
        [JSON.stringify(rows), configChanged],
      );
      await tx.query('DELETE FROM webhook_endpoints WHERE seen_at < now() - make_interval(secs => $1::float8 / 1000)', [
        forgetAfterMs,
      ]);
    });
  }

  /** The endpoints a 410 disabled, while their configuration is unchanged. */
  async disabledEndpoints(): Promise<Set<string>> {
    const rows = await (
      await this.db()
    ).query<{ id: string }>('SELECT id FROM webhook_endpoints WHERE disabled_fingerprint = fingerprint');
    return new Set(rows.map((row) => row.id));
  }

  /** Up to `limit` due deliveries of one endpoint, leased for `leaseMs` (due again after it, to anyone). */
  async claim(endpointId: string, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    const leaseToken = randomUUID();
    const rows = await (
      await this.db()
    ).query<DeliveryRow & { retry_since: Date }>(
      `UPDATE webhook_deliveries d SET attempts = d.attempts + 1, lease_token = $3,
         next_attempt_at = now() + make_interval(secs => $4::float8 / 1000)
       WHERE d.id IN (SELECT id FROM webhook_deliveries
         WHERE endpoint_id = $1 AND status = 'pending' AND next_attempt_at <= now()
           AND NOT EXISTS (SELECT 1 FROM webhook_endpoints ep WHERE ep.id = $1 AND ep.disabled_fingerprint = ep.fingerprint)
         ORDER BY next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING d.id, d.endpoint_id, d.type, d.data, d.occurred_at, d.attempts, d.retry_since`,
      [endpointId, limit, leaseToken, leaseMs],
    );
    return rows.map((row) => ({
      id: row.id,
      endpointId: row.endpoint_id,
      type: row.type,
      data: row.data,
      occurredAt: new Date(row.occurred_at),
      attempt: row.attempts,
      retrySince: new Date(row.retry_since),
      leaseToken,
    }));
  }

  /**
   * The attempt's outcome, written only while the claim still holds the row; false when it lost it.
   * A 2xx is a fact whoever holds the row: written while the row is pending even after the lease
   * ran out, so a slower attempt's failure never turns a delivered event into a retried or dead one.
   */
  async settle(claim: ClaimedDelivery, outcome: DeliveryOutcome): Promise<boolean> {
    return (await this.settleMany([{ claim, outcome }])).has(claim.id);
  }

  /**
   * Several attempts' outcomes in one statement, each under the rule of `settle`; the ids written.
   * A delivery appears at most once in `outcomes` (WebhookOutcomes keeps a second one for its next
   * statement): an UPDATE … FROM joining one row twice would write one of the two, unsaid which.
   */
  async settleMany(outcomes: readonly { claim: ClaimedDelivery; outcome: DeliveryOutcome }[]): Promise<Set<string>> {
    if (outcomes.length === 0) return new Set();
    const rows = await (
      await this.db()
    ).query<{ id: string }>(
      `UPDATE webhook_deliveries d SET status = x.status, lease_token = NULL, last_status = x.http_status,
         last_error = x.error, next_attempt_at = now() + make_interval(secs => x.retry_ms / 1000),
         finished_at = CASE WHEN x.status = 'pending' THEN NULL ELSE now() END
       FROM json_to_recordset($1::json) AS x(id uuid, lease uuid, status text, http_status int, error text, retry_ms float8)
       WHERE d.id = x.id AND (d.lease_token = x.lease OR x.status = 'delivered') AND d.status = 'pending'
       RETURNING d.id`,
      [
        JSON.stringify(
          outcomes.map(({ claim, outcome }) => ({
            id: claim.id,
            lease: claim.leaseToken,
            status: outcome.status,
            http_status: outcome.httpStatus ?? null,
            error: outcome.error ?? null,
            retry_ms: outcome.retryInMs ?? 0,
          })),
        ),
      ],
    );
    return new Set(rows.map((row) => row.id));
  }

  /** A 410: the endpoint stops until its configuration changes (its fingerprint then differs). */
  async disable(endpointId: string): Promise<void> {
    await (
      await this.db()
    ).query('UPDATE webhook_endpoints SET disabled_fingerprint = fingerprint WHERE id = $1', [endpointId]);
  }

  /** `failing`: pending after a failed attempt; `dead`: given up. Newest first, at most LIST_ROWS. */
  async list(status: 'failing' | 'dead'): Promise<DeliveryView[]> {
    const rows = await (
      await this.db()
    ).query<DeliveryRow>(
      `SELECT id, endpoint_id, type, status, attempts, occurred_at, next_attempt_at, last_status, last_error, data
       FROM webhook_deliveries
       WHERE CASE $1 WHEN 'dead' THEN status = 'dead' ELSE status = 'pending' AND last_error IS NOT NULL END
       ORDER BY occurred_at DESC LIMIT $2`,
      [status, LIST_ROWS],
    );
    return rows.map(viewOf);
  }

  /** Sends a delivery again now, with a fresh 24 h of retries; undefined when no such delivery. */
  async retry(id: string): Promise<DeliveryView | undefined> {
    const rows = await (
      await this.db()
    ).query<DeliveryRow>(
      // A row under a live lease is being sent now: left as it is (freeing it let a second replica send it at once).
      `WITH freed AS (UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), retry_since = now(),
         lease_token = NULL, finished_at = NULL
       WHERE id = $1 AND NOT (status = 'pending' AND lease_token IS NOT NULL AND next_attempt_at > now())
       RETURNING id, endpoint_id, type, status, attempts, occurred_at, next_attempt_at, last_status, last_error, data)
       SELECT * FROM freed UNION ALL
       SELECT id, endpoint_id, type, status, attempts, occurred_at, next_attempt_at, last_status, last_error, data
       FROM webhook_deliveries WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM freed)`,
      [id],
    );
    return rows.length === 1 ? viewOf(rows[0]) : undefined;
  }

  /**
   * A budget window passing a threshold, once per endpoint across replicas (the unique event
   * key); true when this call wrote it.
   */
  async recordThreshold(key: string, clientId: string, data: Record<string, unknown>): Promise<boolean> {
    const rows = await (
      await this.db()
    ).query<{ id: string }>(
      `INSERT INTO webhook_deliveries (endpoint_id, event_key, type, client_id, data)
       SELECT ep.id, $1, 'budget.threshold', $2, $3::jsonb FROM webhook_endpoints ep
       WHERE (ep.client_id = $2 OR ep.client_id = '*') AND 'budget.threshold' = ANY (ep.events)
         AND ep.disabled_fingerprint IS DISTINCT FROM ep.fingerprint
       ON CONFLICT DO NOTHING RETURNING id`,
      [`budget.threshold:${key}`, clientId, JSON.stringify(data)],
    );
    return rows.length > 0;
  }

  /** Age in seconds of each endpoint's oldest pending delivery. */
  async oldestPending(): Promise<Map<string, number>> {
    const rows = await (
      await this.db()
    ).query<{ endpoint_id: string; age: number }>(
      `SELECT endpoint_id, extract(epoch FROM now() - min(occurred_at))::float8 AS age
       FROM webhook_deliveries WHERE status = 'pending' GROUP BY endpoint_id`,
    );
    return new Map(rows.map((row) => [row.endpoint_id, Number(row.age)]));
  }

  /**
   * The outbox bounded: delivered rows after `deliveredMs`, dead ones after `deadMs`, and the
   * rows of endpoints no longer configured, or waiting on an endpoint a 410 disabled, after
   * `deadMs` (they resume if its configuration changes before). A budget.threshold row stays until
   * its window resets: its unique key is what makes it once per window (a replica started after
   * the pruning would tell it again). Returns how many went.
   */
  async prune(deliveredMs: number, deadMs: number): Promise<number> {
    const rows = await (
      await this.db()
    ).query<{ n: number }>(
      `WITH gone AS (DELETE FROM webhook_deliveries d
         WHERE ((status = 'delivered' AND finished_at < now() - make_interval(secs => $1::float8 / 1000))
             OR (status = 'dead' AND finished_at < now() - make_interval(secs => $2::float8 / 1000))
             OR (occurred_at < now() - make_interval(secs => $2::float8 / 1000)
                 AND NOT EXISTS (SELECT 1 FROM webhook_endpoints ep WHERE ep.id = d.endpoint_id
                                   AND ep.disabled_fingerprint IS DISTINCT FROM ep.fingerprint)))
            AND NOT (type = 'budget.threshold' AND (data->>'resetsAt')::timestamptz > now())
         RETURNING 1)
       SELECT count(*)::int AS n FROM gone`,
      [deliveredMs, deadMs],
    );
    return rows[0]?.n ?? 0;
  }
}

function viewOf(row: DeliveryRow): DeliveryView {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    type: row.type,
    status: row.status,
    attempts: row.attempts,
    occurredAt: new Date(row.occurred_at).toISOString(),
    nextAttemptAt: row.status === 'pending' ? new Date(row.next_attempt_at).toISOString() : null,
    lastStatus: row.last_status,
    lastError: row.last_error,
    data: row.data,
  };
}
