/**
 * The upstream's request-tracking services (upstream-api-v5.md §4.3: they take the trackId of an
 * earlier request; their path and payload are not shown, so the gateway is configured for them,
 * docs/api.md §8). The simulator answers from what it charged, in two shapes a gateway is
 * configured for alike:
 * - `POST /api/v5/Report/RequestStatus` with `{"trackId": "…"}`: the usual envelope, with
 *   `data.status` `"Charged"` or `"NotCharged"`;
 * - `GET /api/v5/Tracking/Requests/{trackId}`: `{"trackId": "…", "charged": true | false}`.
 * A trackId never received answers 404; a missing or rejected Bearer token 401 (§5.1).
 * Controls: `POST /__simulator/tracking-fault {"kind": "http500" | "unknown-value", "times"?: n}`
 * (500, or a status no configuration lists: `"Processing"`, `"charged": "maybe"`), and the
 * questions asked are in `questions` (and in `GET /__simulator/state` as `trackingQuestions`).
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export const TRACKING_STATUS_PATH = '/api/v5/Report/RequestStatus';
export const TRACKING_LOOKUP_PATH = '/api/v5/Tracking/Requests/:trackId';
/** The two shapes as UPSTREAM_TRACKING configures them (test/tracking.e2e.spec.ts). */
export const TRACKING_SHAPES = {
  statusInBody: {
    path: TRACKING_STATUS_PATH,
    method: 'POST',
    trackIdAt: 'body',
    charged: { pointer: '/data/status', yes: ['Charged'], no: ['NotCharged'] },
    notFound: 'no',
  },
  booleanInPath: {
    path: '/api/v5/Tracking/Requests/{trackId}',
    method: 'GET',
    trackIdAt: 'path',
    charged: { pointer: '/charged', yes: [true], no: [false] },
    notFound: 'unknown',
  },
} as const;

export type TrackingFaultKind = 'http500' | 'unknown-value';
const FAULT_KINDS: readonly TrackingFaultKind[] = ['http500', 'unknown-value'];

/** What the tracking service reads of the simulator's books. */
export interface TrackedBooks {
  acceptsBearer(authorization: string | undefined): boolean;
  /** Whether a request with this trackId reached the simulator's inquiry processing. */
  received(trackId: string): boolean;
  chargeCount(trackId: string): number;
}

export interface TrackingQuestion {
  path: string;
  trackId: string;
  at: number;
}

export class TrackingService {
  private faults: Array<{ kind: TrackingFaultKind; remaining: number }> = [];
  private asked: TrackingQuestion[] = [];

  constructor(private readonly books: TrackedBooks) {}

  get questions(): readonly TrackingQuestion[] {
    return this.asked;
  }

  injectFault(kind: TrackingFaultKind, times = 1): void {
    this.faults.push({ kind, remaining: times });
  }

  reset(): void {
    this.faults = [];
    this.asked = [];
  }

  register(app: FastifyInstance, controlPrefix: string): void {
    app.post(TRACKING_STATUS_PATH, (request, reply) => {
      const body = request.body as { trackId?: unknown } | undefined;
      const trackId = typeof body?.trackId === 'string' ? body.trackId.toLowerCase() : '';
      return this.answer(request, reply, trackId, (charged, fault) => ({
        meta: { trackId: randomUUID(), status: 'Success', code: 200, message: 'OK' },
        data: { trackId, status: fault ? 'Processing' : charged ? 'Charged' : 'NotCharged' },
      }));
    });
    app.get(TRACKING_LOOKUP_PATH, (request, reply) => {
      const trackId = String((request.params as { trackId: string }).trackId).toLowerCase();
      return this.answer(request, reply, trackId, (charged, fault) => ({
        trackId,
        charged: fault ? 'maybe' : charged,
      }));
    });
    app.post(`${controlPrefix}/tracking-fault`, async (request, reply) => {
      const { kind, times = 1 } = (request.body ?? {}) as { kind?: unknown; times?: unknown };
      if (!FAULT_KINDS.includes(kind as TrackingFaultKind) || typeof times !== 'number' || !(times >= 1)) {
        return reply.code(400).send({ error: `kind must be one of ${FAULT_KINDS.join(', ')}; times a number >= 1` });
      }
      this.injectFault(kind as TrackingFaultKind, times);
      return { ok: true };
    });
  }

  private answer(
    request: FastifyRequest,
    reply: FastifyReply,
    trackId: string,
    shape: (charged: boolean, unknownValue: boolean) => unknown,
  ): unknown {
    this.asked.push({ path: request.url, trackId, at: Date.now() });
    if (!this.books.acceptsBearer(request.headers.authorization)) {
      return reply
        .code(401)
        .send({ meta: { trackId: randomUUID(), status: 'Unauthorized', code: 1, message: 'Access token is invalid' } });
    }
    const fault = this.takeFault();
    if (fault === 'http500') {
      return reply
        .code(500)
        .send({ meta: { trackId: randomUUID(), status: 'ServerError', code: 99, message: 'Internal error' } });
    }
    if (!this.books.received(trackId)) {
      return reply
        .code(404)
        .send({ meta: { trackId: randomUUID(), status: 'NotFound', code: 4, message: 'Not found' } });
    }
    return reply.send(shape(this.books.chargeCount(trackId) > 0, fault === 'unknown-value'));
  }

  private takeFault(): TrackingFaultKind | undefined {
    const fault = this.faults[0];
    if (!fault) return undefined;
    fault.remaining -= 1;
    if (fault.remaining <= 0) this.faults.shift();
    return fault.kind;
  }
}
