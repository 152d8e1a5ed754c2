import { RateLimiterMemory, RateLimiterRedis, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { RedisConnection } from '../store/redis-connection.js';

const WINDOW_SECONDS = 60;

/**
 * `perMinute` questions across all replicas (docs/api.md §8): one counter in Redis, or in the
 * process without Redis (one replica). No insurance limiter: with Redis unreachable a replica
 * asks nothing rather than perMinute on its own (test/tracking.e2e.spec.ts counts the questions
 * at the simulator).
 */
export class QuestionLimiter {
  private readonly limiter: RateLimiterAbstract;

  constructor(perMinute: number, redis: RedisConnection) {
    const options = { points: perMinute, duration: WINDOW_SECONDS, keyPrefix: redis.keys.trackingQuestionsPrefix() };
    this.limiter = redis.client
      ? new RateLimiterRedis({ ...options, storeClient: redis.client, rejectIfRedisNotReady: true })
      : new RateLimiterMemory(options);
  }

  /** True when a question may be sent now; false when the minute's are spent or the count cannot be kept. */
  async take(): Promise<boolean> {
    try {
      await this.limiter.consume('all', 1);
      return true;
    } catch {
      // A RateLimiterRes (spent), or Redis unreachable: no question now either way.
      return false;
    }
  }
}
