import { Injectable, Logger } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { callerScopes, type Caller } from '../caller-auth/caller.js';
import type { AppConfig } from '../config/app-config.js';
import { inFlightLeaseMs } from '../config/inquiry-lifetimes.js';
import { sha256 } from '../crypto/sha256.js';
import { SubjectHasher } from '../crypto/subject-hash.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { ProblemException } from '../problem/problem.js';
import { StoreUnavailableError } from '../store/store-unavailable.error.js';
import type { IdempotencyClaim, StoredResponse } from './inquiry-record.js';
import { JSON_CONTENT_TYPE, problemResponse, succeededBody } from './inquiry-outcome.js';
import { IdempotencyStore, InquiryStore } from './inquiry.store.js';
import { statusNow } from './inquiry-deadline.js';

/**
 * A key this request holds, in flight, until it is completed with the answer or released: under
 * every name its caller's end user has on this replica (IdempotencyService.claim).
 */
export interface HeldKey {
  readonly scopes: readonly string[];
  readonly keySha256: string;
  readonly claim: IdempotencyClaim;
}

/**
 * How long after its record settled `succeeded` a claim may still be `in_flight` while the
 * settling request stores its answer (the two writes go together, the record's first); past it
 * the answer is rebuilt from the record (IdempotencyService.answerRepeat). Only a success is
 * rebuilt so early: its answer is exactly the record's data, so when the grace starts does not
 * matter (an owed record landing with the grace already spent rebuilds the same answer).
 */
export const SETTLED_ANSWER_GRACE_MS = 2_000;

/** Milliseconds until a settled record's unstored answer is made from the record (0: now). */
export function msUntilSettledAnswerDue(record: { completedAt?: string }, now = Date.now()): number {
  const completedAt = record.completedAt === undefined ? NaN : Date.parse(record.completedAt);
  // A stored time that is no time (missing, unreadable) is due now: never a NaN fed to a timer.
  if (Number.isNaN(completedAt)) return 0;
  return Math.min(SETTLED_ANSWER_GRACE_MS, Math.max(0, completedAt + SETTLED_ANSWER_GRACE_MS - now));
}

/**
 * Claims per request at most: each round after the first follows the release of an abandoned
 * claim, or a conclusion that lost to the answer stored meanwhile (read by the next round).
 */
const MAX_CLAIM_ROUNDS = 3;

/** Claiming a key either makes it ours, or finds the answer an earlier request with it already has. */
export type ClaimResult = { held: HeldKey } | { replay: StoredResponse };

/**
 * The `Idempotency-Key` rules of docs/api.md §2 (docs/upstream-api.md §4.4 rules 1, 5 and 9):
 * the first request with a key claims it; a retry with the same request replays the stored
 * answer and is never sent again; a different request under the key is refused (422), one
 * still in flight too (409); a claim left behind by a request that died is concluded.
 */
@Injectable()
export class IdempotencyService {
  private readonly logger = new Logger(IdempotencyService.name);
  private readonly ttlSeconds: number;
  /** The longest a live request can hold an Idempotency-Key (config/inquiry-lifetimes.ts). */
  private readonly inFlightLeaseMs: number;

  constructor(
    config: ConfigService<AppConfig, true>,
    private readonly claims: IdempotencyStore,
    private readonly records: InquiryStore,
    private readonly metrics: GatewayMetrics,
    private readonly subjects: SubjectHasher,
  ) {
    this.ttlSeconds = config.get('idempotency', { infer: true }).ttlSeconds;
    this.inFlightLeaseMs = inFlightLeaseMs(config.get('upstream', { infer: true }).timeoutMs);
  }

  /**
   * Claims `key` for the request stamped `trackId`. A repeat gets the earlier answer, or
   * 409 `idempotency_key_in_use` / 422 `idempotency_key_reused`. Store failures are 503.
   */
  async claim(caller: Caller, key: string, trackId: string, fingerprint: string): Promise<ClaimResult> {
    // Whose keys these are: the client, and for an app's end user that user within the client,
    // named by the keyed hash of the user (never a hash anyone can recompute from a `sub`) under
    // every key of the ring. Claimed under each, in one order on every replica: a replica that
    // holds only some of the keys (mid-rollout) finds the claim under one it holds, and of two
    // requests at once the first name both hold decides which one is sent.
    const scopes = callerScopes(caller, caller.subject === undefined ? [] : this.subjects.claimHashes(caller.subject));
    const names = [...scopes].sort();
    const formerScopes =
      caller.subject === undefined ? [] : callerScopes(caller, this.subjects.formerHashes(caller.subject));
    const keySha256 = sha256(key);
    const claim: IdempotencyClaim = { trackId, fingerprint, state: 'in_flight', claimedAt: Date.now() };
    // Another round only when the last found an abandoned claim that sent nothing (released).
    for (let round = 0; round < MAX_CLAIM_ROUNDS; round++) {
      const met = await this.claimEach(names, keySha256, claim);
      const found = met ?? (await this.peekFormer(formerScopes, keySha256));
      if (!found) return { held: { scopes: names, keySha256, claim } };
      // Someone else's: ours (the names claimed before it, every one when found under a former
      // name) is let go, and that one answers. Met under the first name, nothing of ours to free:
      // a plain client's repeat costs no release.
      const ours = met ? names.slice(0, names.indexOf(met[0])) : names;
      if (ours.length > 0) await this.releaseAll(ours, keySha256, trackId);
      const replay = await this.answerRepeat(found[0], names, keySha256, found[1], fingerprint);
      if (replay) return { replay };
    }
    // Each round released an abandoned claim and found another (a replica whose clock runs far
    // behind writes claims that look abandoned at once): refused like a store failure, nothing
    // was sent. Never a 409 without the trackId a caller could follow (docs/api.md §2).
    throw new StoreUnavailableError('idempotency claim (abandoned claims kept reappearing)');
  }

  /** Claims the key under each name in turn: the first earlier claim met, or undefined when all are ours. */
  private async claimEach(
    names: readonly string[],
    keySha256: string,
    claim: IdempotencyClaim,
  ): Promise<[string, IdempotencyClaim] | undefined> {
    for (const [at, scope] of names.entries()) {
      const earlier = await this.claims.claim(scope, keySha256, claim, this.ttlSeconds).catch((error: unknown) => {
        // Refused: a claim that timed out may still land later and would block the retry the
        // 503 invites. The releases (only of our trackId's claims) follow it on the same
        // connection, so Redis runs them after the late claim.
        void this.releaseAll(names.slice(0, at + 1), keySha256, claim.trackId).catch(() => undefined);
        throw error;
      });
      if (earlier) return [scope, earlier];
    }
    return undefined;
  }

  /**
   * A claim of this key under a plain SHA-256 name (a build before keyed names, or a replica
   * without a key). Read after ours are made, so two requests across that upgrade one after the
   * other see each other's claim; only read: such a name is never written by a keyed replica.
   */
  private async peekFormer(
    formerScopes: readonly string[],
    keySha256: string,
  ): Promise<[string, IdempotencyClaim] | undefined> {
    for (const former of formerScopes) {
      const earlier = await this.claims.peek(former, keySha256);
      if (earlier) return [former, earlier];
    }
    return undefined;
  }

  private async releaseAll(scopes: readonly string[], keySha256: string, trackId: string): Promise<void> {
    await Promise.all(scopes.map((scope) => this.claims.release(scope, keySha256, trackId)));
  }

  /** Frees the key: nothing was charged, so a retry runs afresh. */
  release({ scopes, keySha256, claim }: HeldKey): Promise<void> {
    return this.releaseAll(scopes, keySha256, claim.trackId);
  }

  /** Stores the answer every later retry with the key replays, under each name (unless one is stored already). */
  async complete({ scopes, keySha256, claim }: HeldKey, response: StoredResponse): Promise<void> {
    const done: IdempotencyClaim = { ...claim, state: 'done', response };
    await Promise.all(scopes.map((scope) => this.claims.complete(scope, keySha256, done)));
  }

  /**
   * The key was claimed before. Returns the answer to give, or null when the earlier claim
   * was abandoned before anything was sent and has been released (the caller claims afresh).
   */
  private async answerRepeat(
    scope: string,
    names: readonly string[],
    keySha256: string,
    earlier: IdempotencyClaim,
    fingerprint: string,
  ): Promise<StoredResponse | null> {
    // In flight under this name, the key's answer may be stored under a later one of ours: the
    // claim met is a latecomer's (mid-rollout, the first request ran on a replica without this
    // name, and this one is let go once it meets that answer), or the writer's own whose other
    // write was lost with its process. Either way that answer is the one its caller got. Else the
    // request furthest along the names (claimed in one order) is the one sent, or the likelier:
    // the one met first may be a latecomer bound to lose to it, and never sent.
    const later = earlier.state === 'done' ? [] : await this.laterClaims(scope, names, keySha256);
    const answered = later.find((claim) => claim.state === 'done' && claim.response);
    const ahead = later.findLast((claim) => claim.state === 'in_flight') ?? earlier;
    const first = answered ?? ahead;
    if (first.fingerprint !== fingerprint) {
      throw new ProblemException(
        'idempotency_key_reused',
        'This Idempotency-Key was used with a different request; nothing was done with this one. Send it with a new key.',
      );
    }
    if (first.state === 'done' && first.response) {
      // The writer's lost write made good, so a replica holding this name alone replays it too.
      if (answered?.trackId === earlier.trackId)
        await this.claims
          .complete(scope, keySha256, { ...earlier, state: 'done', response: first.response })
          .catch(() => undefined);
      this.metrics.idempotentReplays.inc();
      return first.response;
    }
    // A settled record whose answer is not stored (its complete() lost or still owed, or the
    // process died between the two writes). A replay is the same status and body as the first
    // answer (docs/api.md §2), and only a success can be rebuilt exactly from the record (200
    // with its data, inquiry-outcome.ts): it is, once the settling request has had
    // SETTLED_ANSWER_GRACE_MS to store it. A failure's answer is not in the record (422, 503
    // whose key is released, 500, 502 …): the retry stays in flight (409; a respond-async retry
    // waits) until the answer is stored or released, and only after the lease, when no request
    // can still be storing it, is it concluded from the record (docs/behaviour.md). A pending
    // record with a deadline says exactly when its request can no longer be running
    // (inquiry-deadline.ts); otherwise (no record yet, a record from before deadlines) the lease decides.
    const record = await this.records.get(earlier.trackId);
    const leaseOver = earlier.claimedAt !== undefined && Date.now() - earlier.claimedAt > this.inFlightLeaseMs;
    const abandoned =
      record !== null && record.status !== 'pending'
        ? leaseOver || (record.status === 'succeeded' && msUntilSettledAnswerDue(record) === 0)
        : record?.status === 'pending' && record.deadlineAt !== undefined
          ? statusNow(record) !== 'pending'
          : leaseOver;
    if (abandoned)
      return this.concludeAbandoned([scope, ...names.filter((name) => name !== scope)], keySha256, earlier);
    throw new ProblemException('idempotency_key_in_use', 'A request with this Idempotency-Key is still in progress.', {
      trackId: ahead.trackId,
    });
  }

  /** The claims under this replica's names after `scope` (all of them after a former name). */
  private async laterClaims(scope: string, names: readonly string[], keySha256: string): Promise<IdempotencyClaim[]> {
    const later = names.slice(names.indexOf(scope) + 1);
    const found = await Promise.all(later.map((name) => this.claims.peek(name, keySha256)));
    return found.filter((claim) => claim !== null);
  }

  /**
   * The request that claimed this key died before storing its answer (its process crashed,
   * or the store failed just then). Without a record, or with a waiter's that was never sent
   * (`joined`), it never reached the upstream (the record is written first): the claim is
   * released. Otherwise it is never sent again: the answer is made from its record (a success
   * replayed, a failure 502, anything unfinished 504 and the record `unknown`, as it may have
   * been charged) and stored for every later retry. Both under each of `scopes`: the name it was
   * found under first, then this replica's others it may hold too. When an answer was stored first (the
   * writer's owed complete() landed meanwhile), that one is the answer: null, and the next claim
   * round reads and replays it.
   */
  private async concludeAbandoned(
    scopes: readonly string[],
    keySha256: string,
    claim: IdempotencyClaim,
  ): Promise<StoredResponse | null> {
    const { trackId } = claim;
    const read = await this.records.get(trackId);
    // A waiter's record (`joined`) is no more than none: it died waiting, before sending anything.
    if (!read || (read.status === 'pending' && read.joined)) {
      this.logger.warn(`idempotency claim for ${trackId} abandoned before anything was sent; released`);
      // Under every name this replica holds (only that trackId's claims): one name let go per
      // round would take a round per name, and a ring of three outlasts MAX_CLAIM_ROUNDS (a 503).
      await this.releaseAll(scopes, keySha256, trackId);
      return null;
    }
    // Concluded only while still pending: a settlement landing meanwhile is kept, and answered.
    // A failed conclusion is a store failure (503, retried), never an answer from a state that
    // was not written; a record gone meanwhile is found gone by the next round.
    const record =
      read.status === 'pending' ? await this.records.concludeUnknown(trackId, new Date().toISOString()) : read;
    if (!record) return null;
    let response: StoredResponse;
    if (record.status === 'succeeded') {
      response = { status: 200, contentType: JSON_CONTENT_TYPE, trackId, body: succeededBody(trackId, record.data) };
    } else {
      const problem =
        record.status === 'failed'
          ? new ProblemException(
              'upstream_error',
              'The first request with this Idempotency-Key failed; nothing was charged. Send a new key to ask again.',
              { trackId },
            )
          : new ProblemException(
              'upstream_timeout',
              'The first request with this Idempotency-Key did not finish; its outcome is unknown.',
              { trackId },
            );
      response = { ...problemResponse(problem), trackId };
    }
    // Stored under every name it is still in flight under; the one it was found under decides.
    const done: IdempotencyClaim = { ...claim, state: 'done', response };
    const [stored] = await Promise.all(scopes.map((scope) => this.claims.complete(scope, keySha256, done)));
    if (!stored) return null;
    this.logger.warn(`inquiry ${trackId}: abandoned in flight (record ${record.status}); answer concluded`);
    return response;
  }
}
