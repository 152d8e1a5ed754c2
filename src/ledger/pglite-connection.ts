import { Worker } from 'node:worker_threads';
import type { WorkerError, WorkerOptions, WorkerReply, WorkerRequest } from './pglite-worker.js';

/** The worker's file beside this one: `.ts` under the sources (tests), `.js` once built. */
const WORKER_FILE = new URL(
  import.meta.url.endsWith('.ts') ? './pglite-worker.ts' : './pglite-worker.js',
  import.meta.url,
);

/** A failed statement as the caller would get it in the thread: PostgreSQL's fields (`code`) kept. */
function restored(fields: WorkerError): Error {
  const { name, message, ...rest } = fields;
  return Object.assign(new Error(message), rest, { name });
}

/**
 * A worker that died is re-created after 0.5 s, then 1, 2, … up to 30 s while re-creations keep
 * failing or dying young (each open costs seconds of CPU); one that had been up for the
 * longest wait starts again at 0.5 s. Constants: no outside number feeds these timers.
 */
export const RESPAWN_MS = { first: 500, max: 30_000 };

/** What the owner of the embedded ledger hears about its worker (metrics, logs). */
export interface WorkerEvents {
  /** The worker ended unasked: calls fail until a new one is open. */
  lost?(error: Error): void;
  /** A new worker is open in its place. */
  replaced?(): void;
}

/** What one request asks the worker. */
export type ConnectionRequest = { op: 'query'; sql: string; params?: unknown[] } | { op: 'close' };

/**
 * One PGlite worker thread (pglite-worker.ts) and the RPC over its port: requests numbered,
 * replies (sliced rows, errors as data) matched to them. When the thread ends (an exit, an
 * uncaught error, terminate()), every call waiting on it fails and `ended` resolves: the
 * thread's calls can never be answered any more. PgliteLedgerDatabase (ledger-database.ts)
 * runs one at a time and replaces one that ended unasked.
 */
export class PgliteConnection {
  /** Resolves once PGlite is open in the worker; rejects if it could not be opened (or the worker ended first). */
  readonly opened: Promise<void>;
  /** Resolves, with why, once the worker thread has ended (never rejects). */
  readonly ended: Promise<Error>;
  private readonly worker: Worker;
  private readonly pending = new Map<
    number,
    { rows: unknown[]; resolve: (rows: unknown[]) => void; reject: (error: Error) => void }
  >();
  private open!: () => void;
  private fail!: (error: Error) => void;
  private nextId = 1;
  private failure: Error | null = null;
  private isOpen = false;
  /** Requests of this turn of the event loop, sent together after it (one message, one wake-up of the worker). */
  private outbox: WorkerRequest[] = [];

  /** `pgdata`: PGlite's own directory, or `memory://`. */
  constructor(pgdata: string) {
    this.worker = new Worker(WORKER_FILE, { workerData: { dataDir: pgdata } satisfies WorkerOptions });
    this.opened = new Promise<void>((resolve, reject) => ((this.open = resolve), (this.fail = reject)));
    // Awaited by the caller that needs it; never an unhandled rejection here.
    this.opened.catch(() => undefined);
    this.worker.on('message', (replies: WorkerReply[]) => {
      for (const reply of replies) this.received(reply);
    });
    const gone = (error: Error) => {
      this.failure ??= error;
      this.fail(this.failure);
      // A write among them may have committed before the thread ended: its caller retries it,
      // and the ledger's writes are idempotent by trackId (ON CONFLICT DO NOTHING).
      for (const call of this.pending.values()) call.reject(this.failure);
      this.pending.clear();
    };
    this.worker.on('error', gone);
    this.ended = new Promise((resolve) =>
      this.worker.once('exit', (code) => {
        gone(new Error(`the embedded ledger's worker exited (code ${code})`));
        resolve(this.failure!);
      }),
    );
  }

  private received(reply: WorkerReply): void {
    if (reply.id === 0) {
      if ('error' in reply) return this.fail(restored(reply.error));
      this.isOpen = true;
      return this.open();
    }
    const call = this.pending.get(reply.id);
    if (!call) return;
    if ('error' in reply) {
      this.pending.delete(reply.id);
      call.reject(restored(reply.error));
    } else if (reply.more) {
      call.rows.push(...reply.rows);
    } else {
      this.pending.delete(reply.id);
      call.resolve(call.rows.length === 0 ? reply.rows : [...call.rows, ...reply.rows]);
    }
  }

  /** Why the thread ended after PGlite had opened in it (its calls rejected at that moment); null while it runs or if it never opened. */
  get lostAfterOpening(): Error | null {
    return this.isOpen ? this.failure : null;
  }

  /**
   * Sends one request; rejects at once once the worker has ended. The requests of one turn of the
   * event loop leave together right after it (setImmediate, as Redis commands do:
   * store/write-batching.ts): an inquiry's settlement and its key's answer are one message, and
   * the worker commits such writes together.
   */
  send<R>(request: ConnectionRequest): Promise<R[]> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise<R[]>((resolve, reject) => {
      this.pending.set(id, { rows: [], resolve: resolve as (rows: unknown[]) => void, reject });
      if (this.outbox.length === 0) setImmediate(this.flush);
      this.outbox.push({ ...request, id } satisfies WorkerRequest);
    });
  }

  private readonly flush = () => {
    const requests = this.outbox;
    this.outbox = [];
    // Ended meanwhile: its calls were rejected (gone) and nothing reads the port any more.
    if (this.failure) return;
    try {
      this.worker.postMessage(requests);
    } catch {
      // A value no structured clone takes (a Promise, a function): its own call fails, in order,
      // not the turn's others (nor the process, as an exception thrown in setImmediate would).
      for (const request of requests) {
        try {
          this.worker.postMessage([request]);
        } catch (error) {
          this.pending.get(request.id)?.reject(error as Error);
          this.pending.delete(request.id);
        }
      }
    }
  };

  /** Ends the thread now (PGlite not closed: a close request first keeps its files consistent). */
  async terminate(reason: Error): Promise<void> {
    this.failure ??= reason;
    await this.worker.terminate();
    await this.ended;
  }
}

/** One holder of the connection at a time, the others served in call order. */
export class ConnectionTurns {
  held = false;
  private readonly waiting: Array<() => void> = [];

  /** Resolves when it is the caller's turn (at once when nobody holds it); release() passes it on. */
  take(): Promise<void> {
    if (!this.held) {
      this.held = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.held = false;
  }
}

/** Whether `promise` resolves (false when it rejects). */
export function settledOk(promise: Promise<unknown>): Promise<boolean> {
  return promise.then(
    () => true,
    () => false,
  );
}
