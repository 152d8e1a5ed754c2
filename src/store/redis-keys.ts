/**
 * Every Redis key the gateway uses, built in one place. Keys that a Lua script touches
 * together share a hash tag (`{…}`) so they live in one Cluster slot; keys of unrelated
 * records get their own tag so load spreads across slots. No raw personal data (national
 * code, mobile, IBAN) or caller-chosen text is ever part of a key name: idempotency keys
 * are hashed first.
 */
export class RedisKeys {
  constructor(private readonly prefix: string) {}

  /** The shared upstream token record (hash). Same slot as its lock. */
  tokenRecord(): string {
    return `{${this.prefix}:token}:record`;
  }

  /** Renewal lock: `SET NX PX` with an owner value. */
  tokenLock(): string {
    return `{${this.prefix}:token}:lock`;
  }

  /**
   * The renewal backoff after a failed GetToken (reason, attempts, next attempt time: no
   * secret), shared so that the whole deployment makes one call per round.
   */
  tokenBackoff(): string {
    return `{${this.prefix}:token}:backoff`;
  }

  /** Pub/sub channel announcing a newly written token record. */
  tokenChannel(): string {
    return `${this.prefix}:token:renewed`;
  }

  /** One inquiry record by its trackId. The owning client is a field, checked on read. */
  inquiry(trackId: string): string {
    return `{${this.prefix}:inq:${trackId}}`;
  }

  /**
   * Prefix of the pub/sub channels announcing that an inquiry record has left `pending`: one
   * channel per trackId (`<prefix>:inq:settled:<trackId>`), subscribed only while waited for.
   */
  inquirySettledChannelPrefix(): string {
    return `${this.prefix}:inq:settled:`;
  }

  /** Prefix of the tracking service's question counter, shared by every replica (docs/api.md §8, perMinute). */
  trackingQuestionsPrefix(): string {
    return `${this.prefix}:tracking:questions`;
  }

  /** Prefix of the quota counters (`<prefix>:<size>:{client:<id>}`, one key per counter). */
  quotaPrefix(): string {
    return `${this.prefix}:quota`;
  }

  /**
   * Every budget and ledger-queue key shares one hash tag (the inquiry's accounting), so the
   * one script an inquiry sends before its upstream call (the ledger's duty, with the budget
   * reservation when a budget applies) and the one after it (the entry, with the commit or
   * release) each touch one Cluster slot (docs/architecture.md, "Redis keys"). A budget for all
   * callers is one counter anyway.
   */
  private accounting(name: string): string {
    return `{${this.prefix}:acct}:${name}`;
  }

  budgetWindow(windowId: string): string {
    return this.accounting(`budget:w:${windowId}`);
  }

  /** Reservations not yet settled (hash trackId → JSON) and their deadlines (sorted set). */
  budgetReservations(): string {
    return this.accounting('budget:res');
  }

  budgetDeadlines(): string {
    return this.accounting('budget:due');
  }

  /**
   * An inquiry a reconciliation may still move: what its windows count for it and the last
   * revision applied. Its scripts derive it from budgetReservations() (`…:budget:` + `held:<trackId>`).
   */
  budgetHeld(trackId: string): string {
    return this.accounting(`budget:held:${trackId}`);
  }

  /** One idempotency claim: the caller scope (client, or client and hashed end user) and the SHA-256 of the key. */
  idempotency(scope: string, keySha256: string): string {
    return `{${this.prefix}:idem:${scope}:${keySha256}}`;
  }

  /**
   * An answer kept for reuse (reuse/answer-store.ts), by its question key (an HMAC: no personal
   * data). Its slot's tag is the question, shared with the inquiries in flight on it, so that one
   * script reads both; different questions spread over the slots.
   */
  reuseAnswer(questionKey: string): string {
    return `{${this.prefix}:reuse:${questionKey}}:answer`;
  }

  /** The inquiry in flight on a question, for one `requestHandlingType` (joins need the same one). */
  reuseInFlight(questionKey: string, handling: string): string {
    return `{${this.prefix}:reuse:${questionKey}}:flight:${handling}`;
  }

  /**
   * The ledger's queue (ledger/redis-ledger.queue.ts): `due` (sorted set of trackIds by the
   * time their entry is owed), `duties` (hash: the sealed `unknown` entry owed), `entries`
   * (the stream drained into PostgreSQL). The accounting hash tag: its scripts touch all three,
   * and the budget's keys with them.
   */
  ledger(part: 'due' | 'duties' | 'entries'): string {
    return this.accounting(`ledger:${part}`);
  }
}
