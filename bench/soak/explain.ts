/**
 * What the soak knows about one trackId, to explain an imbalance (docs/soak.md, "Explaining an
 * imbalance"): when the simulator was called under it, what the gateway answered the client (status,
 * request id, replica), which fault window it fell in, and the replicas' log lines naming it. Pure.
 */

/** One answer (or failure to answer) the soak's client saw. */
export interface ClientAttempt {
  kind: string;
  replica: number;
  requestId: string;
  sentAt: number;
  answeredAt: number;
  /** HTTP status, or `timeout` / `connection`. */
  outcome: string;
  /** X-Track-Id of the answer, when it had one. */
  trackId?: string;
  /** Cache-Status of the answer, when it had one: `hit` or `collapsed` for a reused answer. */
  cacheStatus?: string;
  /** The problem's `code` of an error answer (RFC 9457), when it had one. */
  problem?: string;
}

/** A fault as it ran: from its start to the end of its healing. */
export interface FaultWindow {
  name: string;
  from: number;
  to: number;
}

export interface Explanation {
  trackId: string;
  /** Simulator calls under this trackId, ms since the start. */
  upstreamCalls: number[];
  answers: ClientAttempt[];
  /** The faults whose window (widened by `slackMs`) holds a call or an answer of this trackId. */
  faults: string[];
  /** Client attempts without a trackId in flight at the simulator's call (candidates when no answer names it). */
  unanswered: ClientAttempt[];
  logLines: string[];
}

export function explain(
  trackId: string,
  facts: {
    started: number;
    upstreamCalls: readonly { trackId?: string; at: number }[];
    attempts: readonly ClientAttempt[];
    faults: readonly FaultWindow[];
    logs: readonly string[];
    slackMs?: number;
  },
): Explanation {
  const id = trackId.toLowerCase();
  const slack = facts.slackMs ?? 2_000;
  const calls = facts.upstreamCalls.filter((c) => c.trackId?.toLowerCase() === id).map((c) => c.at);
  const answers = facts.attempts.filter((a) => a.trackId?.toLowerCase() === id);
  const moments = [...calls, ...answers.flatMap((a) => [a.sentAt, a.answeredAt])];
  const faults = facts.faults
    .filter((f) => moments.some((t) => t >= f.from - slack && t <= f.to + slack))
    .map((f) => `${f.name} (${seconds(f.from - facts.started)}–${seconds(f.to - facts.started)})`);
  const unanswered = facts.attempts.filter(
    (a) => !a.trackId && calls.some((t) => t >= a.sentAt && t <= a.answeredAt) && !/^[2-4]\d\d$/.test(a.outcome),
  );
  const logLines = facts.logs.filter((line) => line.toLowerCase().includes(id)).map((line) => line.slice(0, 400));
  return {
    trackId: id,
    upstreamCalls: calls.map((t) => t - facts.started),
    answers,
    faults,
    unanswered,
    logLines,
  };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Printable lines for one explanation. */
export function describe(e: Explanation, started: number): string[] {
  const attempt = (a: ClientAttempt) =>
    `${a.kind} on replica ${a.replica}, request ${a.requestId}, sent ${seconds(a.sentAt - started)}, ` +
    `answered ${a.outcome} at ${seconds(a.answeredAt - started)}`;
  return [
    `  trackId ${e.trackId}`,
    `    upstream called at: ${e.upstreamCalls.map(seconds).join(', ') || 'never'}`,
    ...(e.answers.length ? e.answers.map((a) => `    client answer: ${attempt(a)}`) : ['    no answer named it']),
    ...e.unanswered.slice(0, 5).map((a) => `    in flight, no trackId: ${attempt(a)}`),
    `    fault window: ${e.faults.join('; ') || 'none'}`,
    ...e.logLines.slice(0, 8).map((line) => `    log: ${line}`),
  ];
}
