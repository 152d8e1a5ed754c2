/**
 * Stand-alone upstream simulator (`npm run simulator`).
 *
 * Environment: SIMULATOR_PORT (default 4010), SIMULATOR_HOST (default 127.0.0.1),
 * SIMULATOR_USERNAME / SIMULATOR_PASSWORD (defaults 'sandbox-user' / 'sandbox-password').
 * The control surface is served under /__simulator/ (see upstream-simulator.ts).
 *
 * Only starts a server when run as the entry point; importing this module has no side effects.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SANDBOX_INPUT_OUTCOMES, UpstreamSimulator } from './upstream-simulator.js';

export async function runSimulator(env: NodeJS.ProcessEnv = process.env): Promise<UpstreamSimulator> {
  const port = Number(env.SIMULATOR_PORT ?? 4010);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`invalid SIMULATOR_PORT ${env.SIMULATOR_PORT}`);
  const host = env.SIMULATOR_HOST || '127.0.0.1';
  const simulator = new UpstreamSimulator({
    username: env.SIMULATOR_USERNAME || 'sandbox-user',
    password: env.SIMULATOR_PASSWORD || 'sandbox-password',
    // The sandbox's test data answers here too (docs/local-stack.md, "Test data").
    inputOutcomes: SANDBOX_INPUT_OUTCOMES,
  });
  const url = await simulator.start(port, host);
  console.log(`Upstream simulator (API v5) listening on ${url}, control surface at ${url}/__simulator/state`);
  return simulator;
}

function stopOnSignals(simulator: UpstreamSimulator): void {
  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    simulator.stop().then(
      () => {
        console.log(`Upstream simulator stopped (${signal})`);
        process.exitCode = 0;
      },
      (err: unknown) => {
        console.error('Upstream simulator failed to stop', err);
        process.exitCode = 1;
      },
    );
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

function isEntryPoint(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  runSimulator()
    .then(stopOnSignals)
    .catch((err: unknown) => {
      console.error('Upstream simulator failed to start:', err instanceof Error ? err.message : err);
      process.exit(1);
    });
}
