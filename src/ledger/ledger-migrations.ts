import { RECORDS_SQL } from '../store/records.migration.js';
import { ROLLUPS_REPLANNED_SQL, ROLLUPS_SQL } from './ledger-rollups.migration.js';
import { PARKED_ACTIONS_SQL } from './parked-actions.migration.js';
import { WEBHOOK_OUTBOX_SQL } from './webhook-outbox.migration.js';

// The ledger's schema, version by version (applied by ledger-schema.ts, migrate).

/**
 * Versioned migrations, applied in order, each once (table `ledger_migrations`). Never edit
 * one that has shipped: add the next. Every replica runs them at start, under a transaction
 * advisory lock: the first applies them, the others wait and then find nothing to do.
 */
export const MIGRATIONS: ReadonlyArray<{ version: number; name: string; sql: string }> = [
  {
    version: 1,
    name: 'entries and results, partitioned by month',
    sql: `
      -- Facts, appended (docs/api.md §7): one 'settled' or 'overdue' entry per inquiry, and a
      -- 'reconciled' one when the provider's list resolves an unknown. The partition key
      -- (created_at) is part of the key, as PostgreSQL requires; an inquiry's created_at never
      -- changes, so the key is unique by (track_id, kind).
      CREATE TABLE ledger_entries (
        track_id uuid NOT NULL,
        kind text NOT NULL CHECK (kind IN ('settled', 'overdue', 'reconciled')),
        client_id text NOT NULL,
        subject_sha256 text,
        operation text NOT NULL,
        request_handling_type text NOT NULL,
        status text NOT NULL CHECK (status IN ('succeeded', 'failed', 'unknown')),
        charged text NOT NULL CHECK (charged IN ('yes', 'no', 'possibly')),
        cost_units integer NOT NULL,
        created_at timestamptz NOT NULL,
        completed_at timestamptz,
        upstream_code integer,
        request_id text,
        recorded_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (track_id, kind, created_at)
      ) PARTITION BY RANGE (created_at);
      -- Export and usage read by time (keyset pages), reconciliation and reads by trackId (the key).
      CREATE INDEX ledger_entries_created ON ledger_entries (created_at, track_id);
      -- The sealed upstream data, kept for the (shorter) result retention: its own partitions,
      -- dropped whole, so neither retention updates or deletes a row.
      CREATE TABLE ledger_results (
        track_id uuid NOT NULL,
        created_at timestamptz NOT NULL,
        sealed_data text NOT NULL,
        PRIMARY KEY (track_id, created_at)
      ) PARTITION BY RANGE (created_at);
    `,
  },
  {
    version: 2,
    name: 'unsent charges found by reconciliations',
    sql: `
      -- trackIds the provider charged that this gateway never sent, each once: the same file sent
      -- again counts nothing new in vgw_reconciliation_unsent_charges_total (docs/api.md §7).
      -- Rare (a security event each), so small and not partitioned; kept as evidence.
      CREATE TABLE ledger_unsent_charges (
        track_id uuid PRIMARY KEY,
        found_at timestamptz NOT NULL DEFAULT now(),
        request_id text
      );
    `,
  },
  {
    version: 3,
    name: 'resolutions by revision, reservations recorded, budget moves',
    sql: `
      -- A later list may correct a resolution (docs/api.md §7): each reconciled entry has its
      -- revision (1, 2, ... by correction; 0 for settled and overdue), the history kept. The
      -- partition key stays in the primary key, as PostgreSQL requires.
      ALTER TABLE ledger_entries ADD COLUMN revision integer NOT NULL DEFAULT 0;
      UPDATE ledger_entries SET revision = 1 WHERE kind = 'reconciled' AND revision = 0;
      ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_pkey;
      ALTER TABLE ledger_entries ADD PRIMARY KEY (track_id, kind, revision, created_at);
      ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_revision CHECK ((kind = 'reconciled') = (revision > 0));
      -- What the inquiry's budget reservation counted, as its record kept it: a resolution moves
      -- exactly this (docs/api.md §6), never today's prices or budgets. NULL: no budget applied.
      ALTER TABLE ledger_entries ADD COLUMN reserved_units integer, ADD COLUMN reserved_budgets text[],
        ADD COLUMN reserved_daily text, ADD COLUMN reserved_monthly text;
      -- Each budget move applied to Redis for a reconciled entry, written after Redis took it:
      -- what is applied is known here, so a Redis that lost its data replays nothing
      -- (src/ledger/reconciliation.ts). Small (one row per resolution), not partitioned.
      CREATE TABLE ledger_budget_moves (
        track_id uuid NOT NULL,
        revision integer NOT NULL,
        units integer NOT NULL,
        budgets text[] NOT NULL,
        windows text[] NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (track_id, revision)
      );
    `,
  },
  {
    version: 4,
    name: 'entries the database refused, parked',
    sql: `
      -- An entry the database refused for its data (src/ledger/entry-writer.ts), kept as the
      -- JSON the queue held (bytea: storable whatever it holds, lone surrogates and NUL
      -- included) with the database's SQLSTATE and message, so that it stops nothing and is
      -- not lost (docs/runbooks.md, LedgerEntriesParked). Keyed by the entry's SHA-256: a batch
      -- retried after a failure parks nothing twice. track_id, kind and request_id are the
      -- entry's own, escaped to be storable; the upstream data is never kept here.
      CREATE TABLE ledger_parked (
        entry_sha256 text PRIMARY KEY,
        track_id text,
        kind text,
        request_id text,
        entry bytea NOT NULL,
        error_code text NOT NULL,
        error_message text NOT NULL,
        parked_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX ledger_parked_at ON ledger_parked (parked_at);
    `,
  },
  {
    version: 5,
    name: 'results kept only sealed',
    sql: `
      -- The data is kept only sealed (docs/api.md §6): a result written in clear by a gateway
      -- without a key ring, before that rule, is deleted, not served. Sealed values carry the
      -- StoreCipher prefix. One scan of the results, once.
      DELETE FROM ledger_results WHERE left(sealed_data, 7) <> 'enc:v1:';
    `,
  },
  {
    version: 6,
    name: 'reused answers',
    sql: `
      -- A reused inquiry (docs/api.md §2, §6): the trackId of the answer it was given, and the
      -- units its reuse saved (its own type and price then, as recorded). NULL: not reused.
      ALTER TABLE ledger_entries ADD COLUMN reused_from uuid, ADD COLUMN units_saved integer;
      `,
  },
  {
    version: 7,
    name: 'the upstream message beside its code; indexes of the overdue and reconciled entries',
    sql: `
      -- The upstream's meta.message of a failed call (bounded, long digit runs masked:
      -- ledger-entry.ts, upstreamMessageOf), so that the console shows a failure's message beside
      -- its code after the Redis record is gone. NULL for entries written before.
      ALTER TABLE ledger_entries ADD COLUMN upstream_message text;
      -- Each inquiry's latest fact without sorting a period (ledger-rows.ts, LATEST_FACTS): the
      -- few overdue and reconciled entries found by their own small indexes, not by a scan of
      -- every settled one. Built once over the table (a write lock meanwhile: the drainer's queue
      -- holds new entries until it is done).
      CREATE INDEX ledger_entries_overdue ON ledger_entries (created_at, track_id) WHERE kind = 'overdue';
      CREATE INDEX ledger_entries_reconciled ON ledger_entries (created_at, track_id) WHERE kind = 'reconciled';
    `,
  },
  {
    version: 8,
    name: 'refusals per day, client, operation and reason',
    sql: `
      -- Inquiries refused with 429 before a trackId (budget_exhausted: 'budget'; the quotas'
      -- rate_limited: 'quota'), added by each replica's RefusalFlusher (ledger-refusals.ts).
      -- Observability counts, not money: nothing of the entries refers to them. The day is the
      -- Gregorian date in BUDGET_TIMEZONE when refused. Small (days x clients x 2 x 2), kept whole.
      CREATE TABLE ledger_refusals (
        day date NOT NULL,
        client_id text NOT NULL,
        operation text NOT NULL,
        reason text NOT NULL CHECK (reason IN ('budget', 'quota')),
        count bigint NOT NULL CHECK (count >= 0),
        PRIMARY KEY (day, client_id, operation, reason)
      );
    `,
  },
  {
    version: 9,
    name: 'the unit price recorded with each entry',
    sql: `
      -- What one cost unit cost when the inquiry was made (COST_UNIT_PRICE then), recorded with
      -- it and copied to every later fact about it: money is read from it, never from today's
      -- price (docs/decisions/0015-recorded-unit-price.md). numeric is exact and keeps the
      -- amount as written ('0.750' reads back '0.750'). NULL for entries written before, or
      -- while no price was set: reported as unpriced units, never priced at today's price.
      ALTER TABLE ledger_entries ADD COLUMN unit_price numeric, ADD COLUMN currency text;
      -- Both or neither, and what COST_UNIT_PRICE accepts: a malformed price is refused (the
      -- entry parked), never stored. One scan of the table (every row NULL) to check it.
      ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_price CHECK ((unit_price IS NULL) = (currency IS NULL)
        AND (unit_price IS NULL OR (unit_price >= 0 AND unit_price < 1e18 AND scale(unit_price) <= 6
          AND currency ~ '^[A-Z]{3}$')));
    `,
  },
  {
    version: 10,
    name: 'resolutions say who learned them; the questions to the tracking service',
    sql: `
      -- Who learned a resolution (docs/api.md §8): the provider's list ('reconciliation') or its
      -- tracking service ('tracking'). Every earlier resolution was a list's. NULL on settled and
      -- overdue entries.
      ALTER TABLE ledger_entries ADD COLUMN resolved_by text
        CHECK (resolved_by IS NULL OR resolved_by IN ('reconciliation', 'tracking'));
      UPDATE ledger_entries SET resolved_by = 'reconciliation' WHERE kind = 'reconciled';
      -- The few unknown entries found without a scan of the settled ones: the tracker's
      -- candidates and the gauge of unknowns older than a day (src/tracking/tracking-book.ts).
      CREATE INDEX ledger_entries_unknown ON ledger_entries (created_at, track_id) WHERE status = 'unknown';
      -- One row per unknown inquiry asked about: its lease (one replica asks at a time, until
      -- leased_until), its backoff (not before next_at), how often and when it was last asked,
      -- and the last answer (a vgw_tracking_questions_total result), shown in the console.
      -- Small (the unknowns of a day), not partitioned; a row is never deleted before the
      -- inquiry's entries (kept as the history of the questions).
      CREATE TABLE ledger_tracking (
        track_id uuid PRIMARY KEY,
        created_at timestamptz NOT NULL,
        questions integer NOT NULL DEFAULT 0,
        last_asked_at timestamptz,
        last_answer text,
        next_at timestamptz NOT NULL DEFAULT now(),
        leased_until timestamptz NOT NULL DEFAULT '-infinity',
        done boolean NOT NULL DEFAULT false
      );
    `,
  },
  {
    version: 11,
    name: 'webhook outbox, filled with the facts that cause its events',
    sql: WEBHOOK_OUTBOX_SQL,
  },
  {
    version: 12,
    name: 'the single-node records: inquiries, Idempotency-Keys and reuse answers without Redis',
    sql: RECORDS_SQL,
  },
  {
    version: 13,
    name: 'parked entries re-driven or discarded by operators',
    sql: PARKED_ACTIONS_SQL,
  },
  {
    version: 14,
    name: "operators' actions: who did what",
    sql: `
      -- Who reconciled, exported or retried a delivery (docs/api.md §7, "Who did what"): appended,
      -- never changed. The operator is a console sign-in's sub and name or an API key's client id;
      -- no end user's data is kept here (summary holds counts, periods and client ids only).
      CREATE TABLE ledger_operator_actions (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        at timestamptz NOT NULL DEFAULT now(),
        action text NOT NULL CHECK (action IN ('reconciliation', 'export', 'delivery_retry')),
        operator_kind text NOT NULL CHECK (operator_kind IN ('operator', 'api_key')),
        operator_id text NOT NULL,
        operator_name text,
        request_id text,
        summary jsonb NOT NULL DEFAULT '{}'
      );
      CREATE INDEX ledger_operator_actions_at ON ledger_operator_actions (at);
    `,
  },
  {
    version: 15,
    name: 'daily roll-ups per client, operation and outcome, kept by the statement that writes entries',
    sql: ROLLUPS_SQL,
  },
  {
    version: 16,
    name: "the roll-ups' trigger planned at each call (a plan made on an empty ledger scanned every entry)",
    sql: ROLLUPS_REPLANNED_SQL,
  },
];
