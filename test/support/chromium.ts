import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium as playwright, type BrowserContext } from 'playwright-core';

/** Debian's package (`apt-get install chromium`); Playwright's own browser download is never used. */
const CHROMIUM = '/usr/bin/chromium';

/**
 * The browser the console's end-to-end test drives (test/tools.ts gate): its path, or null when
 * it is absent (then the test is skipped), and an error when CI=true (.ci/run installs it).
 */
export function chromium(): string | null {
  const found = spawnSync(CHROMIUM, ['--version'], { encoding: 'utf8' });
  if (found.error || found.status !== 0) {
    if (process.env.CI === 'true') throw new Error(`${CHROMIUM} is required in CI (apt-get install chromium)`);
    return null;
  }
  return CHROMIUM;
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/**
 * One headless Chromium with a fresh profile in a temporary directory (removed on close), and
 * nothing that reaches out on its own (updates, sync, QUIC probing).
 */
export async function launchChromium(executablePath: string): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'vgw-chromium-'));
  const context = await playwright.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1280, height: 800 },
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
