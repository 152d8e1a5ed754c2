// Migration 13 (ledger-migrations.ts): what operators did with parked entries, in a file of its own.

/**
 * One row per parked entry an operator re-drove into the ledger or discarded (docs/api.md §7,
 * src/ledger/parked-actions.ts): who (the caller's client id), why (their reason), when, and the
 * request it came in. Appended once per entry (its key): the first decision is final, and a
 * second operator's is refused. A re-drive writes its entry in the same transaction, so the row
 * exists exactly when the entry was offered to the ledger. Small (parking is rare), kept whole.
 */
export const PARKED_ACTIONS_SQL = `
      CREATE TABLE ledger_parked_actions (
        entry_sha256 text PRIMARY KEY REFERENCES ledger_parked (entry_sha256),
        action text NOT NULL CHECK (action IN ('redriven', 'discarded')),
        client_id text NOT NULL,
        reason text NOT NULL CHECK (char_length(reason) BETWEEN 1 AND 500),
        request_id text,
        written boolean,
        acted_at timestamptz NOT NULL DEFAULT now(),
        CHECK ((action = 'redriven') = (written IS NOT NULL))
      );
`;
