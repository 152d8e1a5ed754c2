/**
 * The soak's client: sends the traffic model's requests (bench/soak/traffic.ts) to the replicas in
 * turn, at the day's rate, as the caller each kind stands for, and records every attempt in the run.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { SignJWT } from 'jose';
import { TEST_CLIENTS } from '../../test/support/gateway.js';
import type { SoakRun } from './run-state.js';
import { ratePerSecond, TrafficModel, type PlannedRequest } from './traffic.js';
import { ADDED, BUDGETED, type SoakWorld } from './world.js';

const REQUEST_TIMEOUT_MS = 5_000;

export class SoakClient {
  /** Requests sent so far: numbers the next one and picks its replica. */
  sent = 0;

  constructor(
    private readonly world: SoakWorld,
    private readonly run: SoakRun,
  ) {}

  /** The day's traffic at the model's rate until the day ends; resolves once every request is answered. */
  async sendTheDay(): Promise<void> {
    const { run } = this;
    const traffic = new TrafficModel(run.plan.seed);
    const inFlight = new Set<Promise<void>>();
    while (run.dayRunning()) {
      const phase = run.phase();
      const request = this.send(traffic.nextRequest()).finally(() => inFlight.delete(request));
      inFlight.add(request);
      await sleep(1000 / ratePerSecond(phase, run.plan.peakRps));
    }
    await Promise.all(inFlight);
  }

  /** One request to the next replica: once, or twice under one Idempotency-Key (a retry after a timeout). */
  private async send(request: PlannedRequest): Promise<void> {
    const number = this.sent++;
    const index = number % this.world.replicas.length;
    const replica = this.world.replicas[index];
    const headers = { ...request.headers, ...(await this.authFor(request)) };
    for (let attempt = 0; attempt < (request.twice ? 2 : 1); attempt++) {
      let outcome: string;
      let trackId: string | undefined;
      let cacheStatus: string | undefined;
      let problem: string | undefined;
      // Ours, so that an attempt the connection dropped is named too (the gateway echoes it).
      const requestId = `soak-${number}-${attempt}`;
      const sentAt = Date.now();
      try {
        const response = await fetch(`${replica.url}${request.path}`, {
          method: 'POST',
          headers: { ...headers, 'x-request-id': requestId },
          body: request.body,
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const text = await response.text();
        outcome = String(response.status);
        if (response.status >= 400)
          try {
            problem = (JSON.parse(text) as { code?: string }).code;
          } catch {
            // not a problem+json body
          }
        trackId = response.headers.get('x-track-id') ?? undefined;
        cacheStatus = response.headers.get('cache-status') ?? undefined;
      } catch (error) {
        outcome = (error as Error).name === 'TimeoutError' ? 'timeout' : 'connection';
      }
      this.run.recordAttempt({
        kind: request.kind,
        replica: index,
        requestId,
        sentAt,
        answeredAt: Date.now(),
        outcome,
        trackId,
        ...(cacheStatus ? { cacheStatus } : {}),
        ...(problem ? { problem } : {}),
      });
    }
  }

  /** The credentials of the caller a kind of request stands for. */
  private async authFor(request: PlannedRequest): Promise<Record<string, string>> {
    // One of 50 end users, by the count of requests sent (already past this one's number).
    if (request.kind === 'jwtUser') return { authorization: `Bearer ${await this.jwt(`user-${this.sent % 50}`)}` };
    if (request.kind === 'budgeted') return { 'x-api-key': BUDGETED.key };
    if (request.kind === 'added') return { 'x-api-key': ADDED.key };
    if (request.kind === 'bad' && request.body.includes('advanced')) return { 'x-api-key': TEST_CLIENTS.basic.key };
    return { 'x-api-key': TEST_CLIENTS.full.key };
  }

  /** An end user's token, as the mobile app would hold it (issuer and audience as the replicas expect). */
  private async jwt(subject: string): Promise<string> {
    return new SignJWT({ scope: 'kyc:shahkar inquiries:read', azp: 'mobile-app' })
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuer('soak')
      .setAudience('verification-gateway')
      .setSubject(subject)
      .setIssuedAt()
      .setExpirationTime('10m')
      .sign(this.world.jwtSigningKey);
  }
}
