// Migration 15 (ledger-migrations.ts): daily roll-ups of each inquiry's latest fact, in a file of
// its own for its length. The SQL below is part of a shipped migration once released: change it
// only by a later migration.

/** The transaction lock every roll-up write takes ('vgwr'): writers of roll-ups one at a time. */
export const ROLLUP_LOCK = 0x76677772;

/** An entry's rank among its inquiry's facts (ledger-rows.ts, LATEST_FIRST): with revision, the latest wins. */
const RANK = (e: string) => `CASE ${e}.kind WHEN 'reconciled' THEN 2 WHEN 'settled' THEN 1 ELSE 0 END`;

/** The roll-up's key, in its column order. */
const KEY = `zone, day, client_id, operation, status, upstream_code, upstream_message, reused, unit_price, currency`;

/**
 * Adds the facts `c` (columns of ledger_entries and `sign`: +1 counted, -1 taken back) to the
 * roll-ups of every zone of `zones` (a FROM item with a column `zone`). What each aggregate of
 * the console reads (ledger-usage.ts, ledger-trends.ts) is kept per key: the code and message of
 * failures only, money as units grouped by the recorded price as written (text: 7.5 and 7.50
 * are two groups, as the scan groups them).
 */
export function addFactsSql(facts: string, zones: string): string {
  return `INSERT INTO ledger_rollups AS r (${KEY}, n, units_spent, units_saved)
    SELECT z.zone, (c.created_at AT TIME ZONE z.zone)::date, c.client_id, c.operation, c.status,
      CASE WHEN c.status = 'failed' THEN c.upstream_code END, CASE WHEN c.status = 'failed' THEN c.upstream_message END,
      (c.reused_from IS NOT NULL AND c.units_saved IS NOT NULL AND c.cost_units = 0), c.unit_price::text, c.currency,
      sum(c.sign)::bigint,
      sum(c.sign * CASE WHEN c.charged <> 'no' THEN c.cost_units ELSE 0 END)::bigint,
      sum(c.sign * CASE WHEN c.reused_from IS NOT NULL AND c.units_saved IS NOT NULL AND c.cost_units = 0
        THEN c.units_saved ELSE 0 END)::bigint
    FROM ${facts} CROSS JOIN ${zones} z
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
    ON CONFLICT (${KEY}) DO UPDATE SET n = r.n + EXCLUDED.n, units_spent = r.units_spent + EXCLUDED.units_spent,
      units_saved = r.units_saved + EXCLUDED.units_saved`;
}

/**
 * Each inquiry's latest fact among the entries created in `range` (a condition on alias `e`),
 * with `sign`, as a FROM item `c`: the anti-joins of ledger-rows.ts (latestFacts), so one scan of
 * the settled entries and the small indexes of the others.
 */
export function latestFactsSql(range: string, sign: number): string {
  const of = (kind: string, newer: string) =>
    `SELECT e.*, ${sign} AS sign FROM ledger_entries e WHERE ${range} AND e.kind = '${kind}'
      AND NOT EXISTS (SELECT 1 FROM ledger_entries l WHERE ${newer} AND l.track_id = e.track_id AND l.created_at = e.created_at)`;
  return `(${of('settled', `l.kind = 'reconciled'`)}
    UNION ALL ${of('overdue', `l.kind <> 'overdue'`)}
    UNION ALL ${of('reconciled', `l.kind = 'reconciled' AND l.revision > e.revision`)}) c`;
}

/**
 * What the trigger runs after each statement that writes entries (below): each touched
 * inquiry's latest fact now, and if it is one of the statement's, the previous latest taken
 * back and the new one added. Migration 15 runs it as static SQL, migration 16 by EXECUTE.
 */
const ROLLUP_STATEMENT = `WITH touched AS (SELECT DISTINCT track_id, created_at FROM new_entries),
        facts AS (
          SELECT e.track_id, e.created_at, e.kind, e.revision, e.client_id, e.operation, e.status, e.charged,
            e.cost_units, e.upstream_code, j->>'upstream_message' AS upstream_message, j->>'reused_from' AS reused_from,
            (j->>'units_saved')::int AS units_saved, j->>'unit_price' AS unit_price, j->>'currency' AS currency,
            ${RANK('e')} AS rank,
            EXISTS (SELECT 1 FROM new_entries f WHERE f.track_id = e.track_id AND f.created_at = e.created_at
              AND f.kind = e.kind AND f.revision = e.revision) AS fresh
          FROM touched t JOIN ledger_entries e ON e.track_id = t.track_id AND e.created_at = t.created_at,
            LATERAL to_jsonb(e) j),
        now_top AS (SELECT DISTINCT ON (track_id, created_at) * FROM facts
          ORDER BY track_id, created_at, rank DESC, revision DESC),
        was_top AS (SELECT DISTINCT ON (track_id, created_at) * FROM facts WHERE NOT fresh
          ORDER BY track_id, created_at, rank DESC, revision DESC),
        moved AS (
          SELECT now_top.*, 1 AS sign FROM now_top WHERE fresh
          UNION ALL
          SELECT w.*, -1 AS sign FROM was_top w
            JOIN now_top n ON n.track_id = w.track_id AND n.created_at = w.created_at AND n.fresh)
        ${addFactsSql('moved c', 'ledger_rollup_zones')}`;

export const ROLLUPS_SQL = `
      -- The zones whose local days the roll-ups are kept in: UTC (usage, the forecast) and each
      -- replica's BUDGET_TIMEZONE (trends), added with a back-fill at start (ledger-rollups.ts).
      CREATE TABLE ledger_rollup_zones (zone text PRIMARY KEY, added_at timestamptz NOT NULL DEFAULT now());
      INSERT INTO ledger_rollup_zones (zone) VALUES ('UTC');
      -- Per zone, local day, client, operation, outcome (status, a failure's code and message,
      -- reuse) and recorded price: the inquiries whose latest fact that is, their units spent and
      -- saved. Kept by the trigger below in the statement that writes the entries, so usage,
      -- trends and the forecast read days × clients × outcomes, not the entries (issue 45).
      -- A row never goes below what its entries hold; n = 0 rows are left (the reads skip them).
      CREATE TABLE ledger_rollups (
        zone text NOT NULL,
        day date NOT NULL,
        client_id text NOT NULL,
        operation text NOT NULL,
        status text NOT NULL,
        upstream_code integer,
        upstream_message text,
        reused boolean NOT NULL,
        unit_price text,
        currency text,
        n bigint NOT NULL,
        units_spent bigint NOT NULL,
        units_saved bigint NOT NULL
      );
      CREATE UNIQUE INDEX ledger_rollups_key ON ledger_rollups (${KEY}) NULLS NOT DISTINCT;
      -- After each statement that writes entries: each touched inquiry's latest fact now, and if
      -- it is one of this statement's, the previous latest is taken back and the new one added
      -- (a correction moves its inquiry from one outcome to another). Under one transaction lock
      -- so that two writers of facts of one inquiry never both miss the other (a statement
      -- waiting on it reads what the first committed); the roll-up rows of the day are written by
      -- every writer anyway. ON CONFLICT DO NOTHING leaves an entry already written out of new_entries.
      -- The columns of later migrations are read by name from the row's JSON (the price as
      -- written: jsonb keeps a numeric's scale), so that a ledger rebuilt at an earlier version
      -- in tests still writes (test/recorded-price.integration.spec.ts).
      CREATE FUNCTION ledger_rollups_after_insert() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM new_entries) THEN RETURN NULL; END IF;
        PERFORM pg_advisory_xact_lock(${ROLLUP_LOCK});
        ${ROLLUP_STATEMENT};
        RETURN NULL;
      END $fn$;
      CREATE TRIGGER ledger_rollups_insert AFTER INSERT ON ledger_entries REFERENCING NEW TABLE AS new_entries
        FOR EACH STATEMENT EXECUTE FUNCTION ledger_rollups_after_insert();
      -- The entries written before, once (the trigger's lock on the table holds writers meanwhile).
      ${addFactsSql(latestFactsSql('true', 1), 'ledger_rollup_zones')};
`;

/**
 * Migration 16: the trigger's statement run by EXECUTE, planned at each call with the entries'
 * and the statement's row counts of the moment. As static SQL, PL/pgSQL kept the plan made at
 * its first call for the session's life: on the embedded ledger (one session, no autovacuum,
 * no ANALYZE to invalidate it) a hash join over a scan of every entry, planned when there were
 * none, so each batch of the drainer cost more as the entries grew (docs/performance.md,
 * "Single-node records": 500 entries took 138 ms of CPU at 200 000 entries, 18 ms re-planned).
 * Its pages read at random costed as in memory (1.1, the default 4 a disk's): the statement's
 * rows are a batch, the entries the whole ledger, and with the default a batch of 500 still
 * scanned every entry up to ~150 000 of them (50 ms at 50 000; 20–35 ms with 1.1 at any size).
 */
export const ROLLUPS_REPLANNED_SQL = `
      CREATE OR REPLACE FUNCTION ledger_rollups_after_insert() RETURNS trigger LANGUAGE plpgsql
        SET random_page_cost = 1.1 AS $fn$
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM new_entries) THEN RETURN NULL; END IF;
        PERFORM pg_advisory_xact_lock(${ROLLUP_LOCK});
        EXECUTE $sql$${ROLLUP_STATEMENT}$sql$;
        RETURN NULL;
      END $fn$;
`;
