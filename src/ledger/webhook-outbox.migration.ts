// Migration 10 (ledger-migrations.ts): the webhook outbox, in a file of its own for its length.

/**
 * The outbox of docs/api.md §9: its events are written by the statements that write their facts
 * (triggers), so an event exists exactly when its fact does, whatever writes it (the drainer, a
 * reconciliation, the provider's tracking). Read and written by src/webhooks/.
 */
export const WEBHOOK_OUTBOX_SQL = `
      -- The configured endpoints (WEBHOOKS), mirrored by every replica with WEBHOOKS at start, on
      -- each re-read and every few seconds (src/webhooks/webhook-outbox.ts), so that the triggers below know who subscribes.
      -- seen_at: the last time a replica configuring it mirrored it (an endpoint is forgotten only
      -- when none has for a while: replicas may hold different configurations during a rollout).
      -- fingerprint: the SHA-256 of the endpoint's configuration; a 410 sets disabled_fingerprint,
      -- and the endpoint stays disabled until its configuration (so its fingerprint) changes:
      -- meanwhile no event is written for it (the outbox does not grow for a receiver that left).
      CREATE TABLE webhook_endpoints (
        id text PRIMARY KEY,
        client_id text NOT NULL,
        events text[] NOT NULL,
        fingerprint text NOT NULL,
        disabled_fingerprint text,
        seen_at timestamptz NOT NULL DEFAULT now()
      );
      -- One row per event and endpoint (docs/api.md §9): its id is the webhook-id of every
      -- attempt. Written in the transaction of the fact that causes it; claimed by the delivery
      -- workers of every replica (FOR UPDATE SKIP LOCKED; a claim leases the row until
      -- next_attempt_at under lease_token, so a replica killed mid-delivery leaves it to another).
      -- event_key makes an event once per endpoint: a ledger entry's key, or a budget window's
      -- threshold (fired once across replicas by this uniqueness).
      CREATE TABLE webhook_deliveries (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        endpoint_id text NOT NULL,
        event_key text NOT NULL,
        type text NOT NULL,
        client_id text NOT NULL,
        data jsonb NOT NULL,
        occurred_at timestamptz NOT NULL DEFAULT now(),
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'dead')),
        attempts integer NOT NULL DEFAULT 0,
        retry_since timestamptz NOT NULL DEFAULT now(),
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        lease_token uuid,
        last_status integer,
        last_error text,
        finished_at timestamptz,
        UNIQUE (endpoint_id, event_key)
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE status <> 'pending';
      -- inquiry.settled (a settled or overdue entry) and inquiry.resolved (a reconciled one) ride
      -- the statement that writes the entries (the drainer's batch, a reconciliation): no round
      -- trip more, and only entries newly written (ON CONFLICT DO NOTHING leaves others out of
      -- the transition table). No personal data: trackId, operation, status, charged, completedAt.
      CREATE FUNCTION webhook_entry_events() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM webhook_endpoints) THEN RETURN NULL; END IF;
        INSERT INTO webhook_deliveries (endpoint_id, event_key, type, client_id, data)
        SELECT ep.id, n.type || ':' || n.track_id || ':' || n.kind || ':' || n.revision, n.type, n.client_id,
          jsonb_build_object('trackId', n.track_id, 'operation', n.operation, 'status', n.status,
            'charged', n.charged,
            'completedAt', to_char(n.completed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
        FROM (SELECT *, CASE kind WHEN 'reconciled' THEN 'inquiry.resolved' ELSE 'inquiry.settled' END AS type
              FROM new_entries) n
        JOIN webhook_endpoints ep ON (ep.client_id = n.client_id OR ep.client_id = '*') AND n.type = ANY (ep.events)
          AND ep.disabled_fingerprint IS DISTINCT FROM ep.fingerprint
        ON CONFLICT DO NOTHING;
        RETURN NULL;
      END $fn$;
      CREATE TRIGGER ledger_entries_webhooks AFTER INSERT ON ledger_entries
        REFERENCING NEW TABLE AS new_entries FOR EACH STATEMENT EXECUTE FUNCTION webhook_entry_events();
      -- ledger.parked, to the operators' endpoints (clientId '*'): the entry's trackId, kind and
      -- the database's SQLSTATE, never the entry or the message (they may quote a value).
      CREATE FUNCTION webhook_parked_events() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        INSERT INTO webhook_deliveries (endpoint_id, event_key, type, client_id, data)
        SELECT ep.id, 'ledger.parked:' || NEW.entry_sha256, 'ledger.parked', '*',
          jsonb_build_object('trackId', NEW.track_id, 'kind', NEW.kind, 'code', NEW.error_code,
            'parkedAt', to_char(NEW.parked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
        FROM webhook_endpoints ep WHERE ep.client_id = '*' AND 'ledger.parked' = ANY (ep.events)
          AND ep.disabled_fingerprint IS DISTINCT FROM ep.fingerprint
        ON CONFLICT DO NOTHING;
        RETURN NULL;
      END $fn$;
      CREATE TRIGGER ledger_parked_webhooks AFTER INSERT ON ledger_parked
        FOR EACH ROW EXECUTE FUNCTION webhook_parked_events();
    `;
