import type { Logger } from '@nestjs/common';

/** Background retries of a record or claim write that failed right after the upstream answered. */
const RETRY_DELAYS_MS = [200, 1000, 5000];

/**
 * Writes that follow an upstream answer: the caller gets the answer at once; a write that
 * fails (a Redis blip) is retried in the background so the record and the replay catch up.
 */
export async function writeOrRetryInBackground(
  logger: Logger,
  what: string,
  write: () => Promise<void>,
): Promise<void> {
  try {
    await write();
    return;
  } catch (error) {
    logger.warn(`${what} not stored (${(error as Error).message}); retrying in the background`);
  }
  const retry = (attempt: number) => {
    const timer = setTimeout(() => {
      write().then(
        () => logger.log(`${what} stored on retry ${attempt + 1}`),
        (error: Error) => {
          if (attempt + 1 < RETRY_DELAYS_MS.length) retry(attempt + 1);
          else logger.error(`${what} could not be stored: ${error.message}`);
        },
      );
    }, RETRY_DELAYS_MS[attempt]);
    timer.unref();
  };
  retry(0);
}
