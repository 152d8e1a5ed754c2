import { Logger } from '@nestjs/common';
import { createGateway } from './bootstrap.js';
import { ConfigError } from './config/load-config.js';

/** Production entry: `node dist/main.js`. Configuration comes from the environment only. */
async function main(): Promise<void> {
  let gateway;
  try {
    gateway = await createGateway(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      // Names the variables, never their values.
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
  const { app, config } = gateway;
  // SIGTERM (Kubernetes) or SIGINT: app.close() runs the shutdown sequence
  // (http/shutdown-sequence.ts: readiness 503, new inquiries refused, long-polls answered, the
  // drain, owed settlements, the pools), then exit 0. Our own
  // handler rather than enableShutdownHooks(), which re-sends the signal to itself afterwards:
  // as PID 1 in a container that signal is ignored, and the exit would hang on any live handle.
  const logger = new Logger('Shutdown');
  // Listened to for the whole life of the process, not once: a second signal (an impatient
  // operator's Ctrl-C, a supervisor repeating SIGTERM) would otherwise take Node's default
  // action and kill the process mid-drain, losing the settlements owed to 202-accepted
  // inquiries. Later signals are logged and ignored; SIGKILL remains the way to cut it short.
  let shuttingDown = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (shuttingDown) {
      logger.warn(`${signal}: already draining; ignored`);
      return;
    }
    shuttingDown = true;
    logger.log(`${signal}: draining, then exiting`);
    app.close().then(
      () => {
        // The last line before exit: the logger's buffer is flushed at exit (json-logger.ts).
        logger.log('stopped');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error(`shutdown failed: ${error instanceof Error ? error.name : 'unknown error'}`);
        process.exit(1);
      },
    );
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, onSignal);
  await app.listen({ port: config.http.port, host: '0.0.0.0' });
  // After listen: the line a supervisor (or a test) can wait for before sending traffic.
  // Names the ops port too when OPS_PORT moves /metrics and /docs off PORT (docs/operations.md).
  const ops = config.http.opsPort === undefined ? '' : `; ops port ${config.http.opsPort} (/metrics, /docs)`;
  new Logger('Bootstrap').log(`listening on port ${config.http.port}${ops}`);
}

await main();
