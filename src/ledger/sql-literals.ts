/**
 * A parameterised statement as one plain SQL text, for PGlite's simple-query `exec`: one call
 * into the WebAssembly backend where its `query` makes six (parse, describe, bind, describe,
 * execute, sync). Measured on this machine (docs/performance.md, "Single-node records"): 254 µs
 * of CPU for an upsert instead of 472 µs. Loaded by pglite-worker.ts, so self-contained too
 * (node: modules and packages only, no sibling).
 *
 * Each value becomes a quoted literal (pg's own `escapeLiteral`), which PostgreSQL types from its
 * context exactly as it types an untyped parameter: the value as text, whatever the JavaScript
 * type (a number as `'42'`, a boolean as `'true'`), as PGlite's serializers send it. Anything else
 * is left to `query` (undefined): an array, an object, a bigint, a NUL (which would end a C
 * string), a lone surrogate (below), a non-finite number, or a text with dollar quoting, an
 * `E'…'` string, a comment or a `$n` in a name (where a `$1` or a quote is not what it looks like).
 *
 * Where the two still differ (test/sql-literals.integration.spec.ts, "where they differ"), which no
 * statement may rely on: a parameter used twice is typed at each use (bound, once for all: `$1::bigint,
 * 10 - $1` is bigint arithmetic bound, integer written in); a placeholder alone as an ORDER BY,
 * GROUP BY or DISTINCT ON item is refused; a number where a timestamp is expected is refused
 * (PGlite sends it as a date); PostgreSQL takes some values and statements PGlite refuses bound.
 */
import pg from 'pg';

const { escapeLiteral } = pg;

/** `$n` outside quoted literals and identifiers; the quoted parts are matched to be skipped. */
const PLACEHOLDER = /'(?:[^']|'')*'|"(?:[^"]|"")*"|\$(\d+)/g;

/**
 * Without a NUL, and without a lone surrogate: PGlite's protocol writer counts a lone trail
 * surrogate after a character of 2 or 3 bytes 1 or 2 bytes short, so the statement's text would
 * lose as many bytes at its end: a value could cut off the statement's own `WHERE`
 * (sql-literals.integration.spec.ts). Native isWellFormed (Node 20; TypeScript's lib has it from
 * ES2024): 30 ns for a 2 KB text, where a /\p{Cs}/u scan takes 1.1 µs.
 */
function writable(text: string): boolean {
  return !text.includes('\0') && (text as string & { isWellFormed(): boolean }).isWellFormed();
}

/** What a literal of a value says, or undefined when it must stay a bound parameter. */
function literalOf(value: unknown): string | undefined {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'string') return writable(value) ? escapeLiteral(value) : undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? `'${String(value)}'` : undefined;
  // As PGlite sends a boolean where a text or JSON is expected; a boolean takes 'true' too.
  if (typeof value === 'boolean') return value ? "'true'" : "'false'";
  return undefined;
}

/**
 * A statement's text cut at its placeholders: the text between them, and each one's parameter
 * (0-based); null when it must stay a bound query. Cut once per text: the statements are constants.
 */
type Cut = { texts: string[]; indexes: number[] } | null;
const cuts = new Map<string, Cut>();
/** Distinct statement texts remembered: the gateway has a few dozen (past it, cut each time: sql-literals.spec.ts). */
const MAX_CUTS = 1_000;

/**
 * Where a `$n` or a quote may not be what it looks like: dollar quoting (a tag as PostgreSQL
 * reads one: `$$`, `$q1$`, `$é$`), a `$n` ending a name (a name may hold `$`: `a$1`), an
 * `E'…'` string, a comment.
 */
const UNCUTTABLE = /\$(?:[A-Za-z_\u0080-\uffff][\w\u0080-\uffff]*)?\$|[\w\u0080-\uffff$]\$\d|\bE'|--|\/\*/i;

function cut(sql: string): Cut {
  if (UNCUTTABLE.test(sql)) return null;
  const texts: string[] = [];
  const indexes: number[] = [];
  let from = 0;
  for (const match of sql.matchAll(PLACEHOLDER)) {
    if (match[1] === undefined) continue;
    // $0: no parameter, PostgreSQL's error (bound).
    if (Number(match[1]) === 0) return null;
    texts.push(sql.slice(from, match.index));
    indexes.push(Number(match[1]) - 1);
    from = match.index + match[0].length;
  }
  texts.push(sql.slice(from));
  return { texts, indexes };
}

/** The statement with its parameters written in, or undefined when it must run as `query` (above). */
export function inlineParameters(sql: string, params: readonly unknown[] = []): string | undefined {
  let known = cuts.get(sql);
  if (known === undefined) {
    known = cut(sql);
    if (cuts.size < MAX_CUTS) cuts.set(sql, known);
  }
  if (known === null) return undefined;
  let text = known.texts[0];
  for (const [at, index] of known.indexes.entries()) {
    const literal = index < params.length ? literalOf(params[index]) : undefined;
    if (literal === undefined) return undefined;
    text += literal + known.texts[at + 1];
  }
  return text;
}
