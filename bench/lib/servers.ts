import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { Command, GatewayStats, ProcessStats, Report, ServerSpec, SimulatorStats } from './ipc.js';

/** A command without its id (distributed over the union). */
type CommandBody = Command extends infer C ? (C extends Command ? Omit<C, 'id'> : never) : never;

const SERVER_SCRIPT = fileURLToPath(new URL('../server-process.js', import.meta.url));

export interface StartOptions {
  /** Node flags for the child (e.g. --cpu-prof). */
  execArgv?: string[];
  /** Another build's bench/server-process.js (A/B comparisons of two versions of the gateway). */
  script?: string;
  /** Keep the child's stdout (default: discarded; the gateway logs there). */
  showStdout?: boolean;
}
const READY_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 10_000;

/** Every child started and not yet stopped, so that a failing run can still kill them all. */
const live = new Set<ServerProcess>();

/** A simulator or gateway running in a child process (bench/server-process.ts). */
export class ServerProcess {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  private readonly exited: Promise<number | null>;

  private constructor(
    readonly name: string,
    readonly url: string,
    private readonly child: ChildProcess,
  ) {
    this.exited = once(child, 'exit').then(([code]) => code as number | null);
    child.on('message', (message) => {
      const report = message as Report;
      if (report.type !== 'reply') return;
      const waiter = this.pending.get(report.id);
      if (!waiter) return;
      this.pending.delete(report.id);
      if (report.ok) waiter.resolve(report.value);
      else waiter.reject(new Error(report.message));
    });
    void this.exited.then(() => {
      live.delete(this);
      for (const { reject } of this.pending.values()) reject(new Error(`${name} exited`));
      this.pending.clear();
    });
  }

  static async start(name: string, spec: ServerSpec, options: StartOptions = {}): Promise<ServerProcess> {
    // stdout to /dev/null: the gateway's log lines are written (and paid for) as in production.
    const child = fork(options.script ?? SERVER_SCRIPT, [JSON.stringify(spec)], {
      stdio: ['ignore', options.showStdout ? 'inherit' : 'ignore', 'inherit', 'ipc'],
      serialization: 'json',
      execArgv: options.execArgv ?? [],
    });
    const report = await new Promise<Report>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${name}: not ready within ${READY_TIMEOUT_MS} ms`)),
        READY_TIMEOUT_MS,
      );
      child.on('message', (message) => {
        const r = message as Report;
        if (r.type === 'ready' || r.type === 'failed') {
          clearTimeout(timer);
          resolve(r);
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${name}: exited with ${code} before it was ready`));
      });
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
    }).catch((error: Error) => {
      child.kill('SIGKILL');
      throw error;
    });
    if (report.type !== 'ready') {
      child.kill('SIGKILL');
      throw new Error(`${name} failed to start: ${report.type === 'failed' ? report.message : report.type}`);
    }
    const server = new ServerProcess(name, report.url, child);
    live.add(server);
    return server;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  private request<T>(command: CommandBody): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.child.send({ ...command, id });
    });
  }

  stats(): Promise<ProcessStats> {
    return this.request<ProcessStats>({ type: 'stats' });
  }

  simulatorStats(): Promise<SimulatorStats> {
    return this.request<SimulatorStats>({ type: 'stats' });
  }

  gatewayStats(): Promise<GatewayStats> {
    return this.request<GatewayStats>({ type: 'stats' });
  }

  /** A full GC first (the child needs --expose-gc), then the stats. */
  statsAfterGc(): Promise<ProcessStats> {
    return this.request<ProcessStats>({ type: 'gc' });
  }

  /** Simulator only: make this share of the inquiries fail upstream (502 supplier error). */
  setFailRatio(failRatio: number): Promise<SimulatorStats> {
    return this.request<SimulatorStats>({ type: 'configure', failRatio });
  }

  /** Asks the child to close its server and exit; kills it if it does not within 10 s. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    if (this.child.connected) this.child.send({ id: this.nextId++, type: 'stop' } satisfies Command);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    const code = await this.exited;
    clearTimeout(timer);
    if (code !== 0)
      throw new Error(
        `${this.name} (pid ${this.pid}) did not stop cleanly (exit ${code}, signal ${this.child.signalCode})`,
      );
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}

/** Last resort on failure: kill every server child still running. */
export function killAllServers(): void {
  for (const server of live) server.kill();
}
