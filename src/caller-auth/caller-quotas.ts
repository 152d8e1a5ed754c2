import { Injectable, Logger } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { AppConfig } from '../config/app-config.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { ProblemException } from '../problem/problem.js';
import { RedisConnection } from '../store/redis-connection.js';
import { sha256 } from '../crypto/sha256.js';
import { SubjectHasher } from '../crypto/subject-hash.js';
import { callerScope, type Caller } from './caller.js';
import { RETRY_AFTER_HEADER } from '../vocabulary/headers.js';
import type { InquiryOperation } from '../upstream/inquiry-operation.js';
import { RefusalTally } from './refusal-tally.js';

const WINDOW_SECONDS = 60;

/**
 * Inquiry quotas (docs/api.md §3: 429 `rate_limited` with `Retry-After`): per client
 * when its API key entry sets `quotaPerMinute`, and per end user (JWT `sub`, within its
 * client) at `USER_QUOTA_PER_MINUTE`. Counted in Redis for all replicas (one single-key Lua
 * script per check, so Cluster-safe); while Redis is unreachable each replica counts alone.
 */
@Injectable()
export class CallerQuotas {
  private readonly logger = new Logger(CallerQuotas.name);
  private readonly limiters = new Map<string, RateLimiterAbstract>();
  private readonly userQuotaPerMinute: number;
  /** The end users' keyed hash (SUBJECT_HASH_KEYS): a user's counter is never named by a hash of its `sub` alone. */
  private readonly subjects: SubjectHasher;

  constructor(
    config: ConfigService<AppConfig, true>,
    private readonly redis: RedisConnection,
    private readonly metrics: GatewayMetrics,
    private readonly refusals: RefusalTally,
  ) {
    this.userQuotaPerMinute = config.get('callers', { infer: true }).userQuotaPerMinute;
    const { keys, derivedFrom } = config.get('subjectHash', { infer: true });
    this.subjects = new SubjectHasher(keys, derivedFrom);
  }

  /**
   * Counts one inquiry of `operation` against the caller's quotas; throws 429 when one is used
   * up, tallied per day, client and operation (RefusalTally) for GET /admin/trends.
   */
  async consume(caller: Caller, operation: InquiryOperation): Promise<void> {
    const checks: Array<[scope: 'client' | 'user', key: string, perMinute: number]> = [];
    if (caller.quotaPerMinute) checks.push(['client', caller.clientId, caller.quotaPerMinute]);
    if (caller.subject && this.userQuotaPerMinute > 0) {
      // Keyed: a `sub` may be personal data (a phone number), and it ends up in a key name. A
      // rotation of the ring starts the user's minute afresh, at most once.
      const scope = callerScope(caller, (subject) => this.subjects.hash(subject));
      checks.push(['user', sha256(scope).slice(0, 32), this.userQuotaPerMinute]);
    }
    for (const [scope, key, perMinute] of checks) {
      try {
        await this.limiter(scope, perMinute).consume(`{${scope}:${key}}`);
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) {
          // Neither Redis nor the in-process fallback answered: let the inquiry through.
          this.logger.warn(
            `quota check failed (${rejection instanceof Error ? rejection.message : 'unknown'}); not enforced for this request`,
          );
          continue;
        }
        this.metrics.quotaRejections.inc({ scope });
        this.refusals.count(caller.clientId, operation, 'quota');
        const retryAfter = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
        throw new ProblemException(
          'rate_limited',
          `The ${scope === 'client' ? 'client' : 'user'} quota of ${perMinute} inquiries per minute is used up.`,
          {
            headers: { [RETRY_AFTER_HEADER]: String(retryAfter) },
          },
        );
      }
    }
  }

  /** One limiter per scope and quota size, created on first use. */
  private limiter(scope: 'client' | 'user', perMinute: number): RateLimiterAbstract {
    const id = `${scope}:${perMinute}`;
    let limiter = this.limiters.get(id);
    if (!limiter) {
      const options = {
        points: perMinute,
        duration: WINDOW_SECONDS,
        keyPrefix: `${this.redis.keys.quotaPrefix()}:${perMinute}`,
      };
      limiter = this.redis.client
        ? new RateLimiterRedis({
            ...options,
            storeClient: this.redis.client,
            rejectIfRedisNotReady: true,
            insuranceLimiter: new RateLimiterMemory(options),
          })
        : new RateLimiterMemory(options);
      this.limiters.set(id, limiter);
    }
    return limiter;
  }
}
