/**
 * A server for the HTTP load benchmark, in its own process so that the load generator
 * (autocannon, in the parent), the gateway and the upstream simulator do not share one
 * event loop. Started by bench/lib/servers.ts with the spec as JSON in argv[2]; talks over
 * the IPC channel (bench/lib/ipc.ts) and exits when told to stop or when the parent goes away.
 */
import { startGateway, type RunningGateway } from '../test/support/gateway.js';
import { UpstreamSimulator } from '../test/upstream-simulator/upstream-simulator.js';
import type { Command, Report, ServerSpec } from './lib/ipc.js';

const PROBE_TIMEOUT_MS = 20_000;

function send(report: Report): void {
  process.send?.(report);
}

const rssMb = () => Math.round(process.memoryUsage().rss / 2 ** 20);

/** Posts the probe inquiry until it answers 200: token obtained and store (Redis) connected. */
async function untilServing(url: string, body: string, apiKey: string): Promise<void> {
  const giveUpAt = Date.now() + PROBE_TIMEOUT_MS;
  let last = '';
  while (Date.now() < giveUpAt) {
    try {
      const response = await fetch(`${url}/v1/kyc/shahkar`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
        body,
      });
      last = `${response.status} ${(await response.text()).slice(0, 200)}`;
      if (response.status === 200) return;
    } catch (error) {
      last = (error as Error).message;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`gateway did not answer 200 within ${PROBE_TIMEOUT_MS} ms (last: ${last})`);
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '{}') as ServerSpec;
  let stop: () => Promise<void>;
  let stats: () => unknown;

  if (spec.role === 'simulator') {
    // Credit for far more inquiries than any run makes (the default covers 10,000).
    const sim = new UpstreamSimulator({ latencyMs: spec.latencyMs, credit: Number.MAX_SAFE_INTEGER });
    const url = await sim.start(0, '127.0.0.1');
    stop = () => sim.stop();
    stats = () => ({ tokenCalls: { ...sim.tokenCalls }, inquiryCalls: sim.inquiryCalls, rssMb: rssMb() });
    send({ type: 'ready', url });
  } else {
    let gateway: RunningGateway | undefined;
    try {
      gateway = await startGateway(spec.env);
      await untilServing(gateway.url, spec.probeBody, spec.probeApiKey);
    } catch (error) {
      await gateway?.close().catch(() => undefined);
      throw error;
    }
    const running = gateway;
    stop = () => running.close();
    stats = () => ({ rssMb: rssMb() });
    send({ type: 'ready', url: running.url });
  }

  let stopping = false;
  const shutdown = async (exitCode: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    await stop().catch(() => undefined);
    process.exit(exitCode);
  };

  process.on('message', (message) => {
    const command = message as Command;
    if (command.type === 'stats') {
      send({ type: 'reply', id: command.id, ok: true, value: stats() });
    } else if (command.type === 'stop') {
      // The parent waits for this process to exit; the exit code says whether stop() worked.
      stopping = true;
      void stop().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    }
  });
  // The parent died or closed the channel: do not linger.
  process.on('disconnect', () => void shutdown(0));
}

main().catch((error: Error) => {
  send({ type: 'failed', message: error.stack ?? error.message });
  process.exitCode = 1;
  setTimeout(() => process.exit(1), 100).unref();
});
