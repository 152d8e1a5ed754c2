/**
 * `npm run sandbox` as an app developer uses it (docs/local-stack.md, "The sandbox's callers and
 * test data"): the narrow key's 403, the test inputs' non-match and supplier failures, a JWT
 * minted by `npm run sandbox:jwt` (and its usage), the package version in vgw_build_info.
 *
 * Then stopped by its PID, as a process manager or `kill <pid>` does: SIGTERM to
 * the npm process must end the gateway and the simulator too. (npm forwards the signal to its
 * one child; the script `exec`s node, so that child is the sandbox itself and not a shell
 * that would ignore the signal and leave the gateway serving.)
 *
 * Its banner (key, URLs, console, a first curl) comes last, after start-up's quieted lines; and
 * `npm test`'s clean-tree check (test/support/clean-tree.js) tolerates its running ledger's files
 * while still catching a file a test wrote, here in a git repository made for the purpose.
 *
 * Pointed at the sandbox's webhook receiver (test/sandbox/webhook-receiver.ts, as built by this
 * very `npm run sandbox`), it delivers an inquiry's `inquiry.settled`, which the receiver verifies
 * with the standardwebhooks package and prints; a forged delivery is refused with 400.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { nextEvent } from './support/events.js';
import { freePort } from './support/redis-server.js';
import { ledgersInUse, runChanges, treeChanges, treeState } from './support/clean-tree.js';

const ROOT = new URL('..', import.meta.url).pathname;
const API_KEY = 'sandbox-script-test-key';
const HOOK_SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;

/** `PORT=<port> npm run --silent sandbox:jwt -- <args>`: the token it prints. */
async function mintToken(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)('npm', ['run', '--silent', 'sandbox:jwt', '--', ...args], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port) },
  });
  return stdout.trim();
}

/** True while any process of the group `pgid` is alive. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A git work tree that ignores .data/, as the repository does: where the sandbox keeps its ledger here. */
function gitRepository(): string {
  const repo = mkdtempSync(join(tmpdir(), 'vgw-sandbox-tree-'));
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, stdio: 'ignore' });
  git('init', '-q');
  writeFileSync(join(repo, '.gitignore'), '.data/\n*.rdb\n');
  git('add', '.');
  git('-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qm', 'init');
  return repo;
}

describe('npm run sandbox', () => {
  let npm: ChildProcess | undefined;
  let receiver: ChildProcess | undefined;
  const repo = gitRepository();

  afterAll(() => {
    // Whatever went wrong, leave nothing behind: the whole process group.
    if (npm?.pid && groupAlive(npm.pid)) process.kill(-npm.pid, 'SIGKILL');
    if (receiver?.exitCode === null) receiver.kill('SIGKILL');
    rmSync(repo, { recursive: true, force: true });
  });

  it('serves its documented callers and test data, then stops the gateway and the simulator on SIGTERM', async () => {
    const port = await freePort();
    const simulatorPort = await freePort();
    const hookPort = await freePort();
    const hookUrl = `http://127.0.0.1:${hookPort}/`;
    const treeBefore = treeState(repo)!;
    // LOG_LEVEL unset, as a developer starts it: start-up quiet, info afterwards.
    const { LOG_LEVEL: _unset, ...environment } = process.env;
    npm = spawn('npm', ['run', '--silent', 'sandbox'], {
      cwd: ROOT,
      env: {
        ...environment,
        PORT: String(port),
        SIMULATOR_PORT: String(simulatorPort),
        SANDBOX_API_KEY: API_KEY,
        // Its ledger on disk as by default (.data/ledger), but in the git repository made above.
        LEDGER_DATA_DIR: join(repo, '.data', 'ledger'),
        // As the receiver's banner says to start it (WEBHOOKS_ALLOW_HTTP is the sandbox's default).
        WEBHOOKS: JSON.stringify([
          { id: 'sandbox', clientId: '*', url: hookUrl, secret: HOOK_SECRET, events: ['inquiry.settled'] },
        ]),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group, so the check below sees every descendant
    });
    let output = '';
    npm.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    npm.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = nextEvent<number | null>(npm, 'exit', () => true, 120_000);
    const lastBannerLine = /\/admin\/usage\?[^\n]*\n\n$/;
    await nextEvent(npm.stdout!, 'data', () => lastBannerLine.test(output), 100_000);
    // The banner came last: after start-up, whose info lines (modules, routes, the ledger) are quiet.
    const [startup, banner] = output.split('Verification gateway sandbox on');
    expect(startup).not.toContain('"level"');
    expect(banner).not.toContain('"level"');
    expect(banner).toContain(`API key (every scope): ${API_KEY}`);
    expect(banner).toContain(`curl -s -X POST http://127.0.0.1:${port}/v1/kyc/shahkar -H 'X-Api-Key: ${API_KEY}'`);
    expect((await fetch(`http://127.0.0.1:${port}/health/live`)).status).toBe(200);
    expect(output).toContain(`Operators' console: http://127.0.0.1:${port}/console`);
    expect((await fetch(`http://127.0.0.1:${port}/console`)).status).toBe(200);

    expect(output).toContain('Webhooks (WEBHOOKS) to: sandbox, as each inquiry settles');
    // The receiver `npm run webhook-receiver` runs, built by the sandbox's compile above.
    receiver = spawn(process.execPath, [join(ROOT, '.build/test/sandbox/webhook-receiver.js')], {
      env: { ...process.env, WEBHOOK_RECEIVER_PORT: String(hookPort), WEBHOOK_SECRET: HOOK_SECRET },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let received = '';
    receiver.stdout!.on('data', (chunk: Buffer) => (received += chunk.toString()));
    receiver.stderr!.on('data', (chunk: Buffer) => (received += chunk.toString()));
    await nextEvent(receiver.stdout!, 'data', () => received.includes('npm run sandbox\n'), 20_000);
    expect(received).toContain(
      `WEBHOOKS='[{"id":"sandbox","clientId":"*","url":"${hookUrl}","secret":"${HOOK_SECRET}"`,
    );

    const inquire = async (path: string, body: object, auth: Record<string, string>) => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...auth },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const key = { 'x-api-key': API_KEY };
    const mobileNumber = '09121234567';
    const mismatch = await inquire('/v1/kyc/shahkar', { nationalCode: '0499370902', mobileNumber }, key);
    expect(mismatch).toMatchObject({ status: 200, body: { data: { isMatch: false } } });
    for (const [path, body] of [
      ['/v1/kyc/shahkar', { nationalCode: '0499370910', mobileNumber }],
      ['/v1/kyc/shahkar', { nationalCode: '0499370929', mobileNumber }],
      ['/v1/kyc/iban', { iban: 'IR490170000000000000000002' }],
      ['/v1/kyc/iban', { iban: 'IR140540000000000000000003' }],
    ] as const) {
      expect(await inquire(path, body, key)).toMatchObject({ status: 502, body: { code: 'upstream_error' } });
    }
    // The first supplier fails; advanced handling walks on to the second.
    const advanced = { iban: 'IR140540000000000000000003', requestHandlingType: 'advanced' };
    expect(await inquire('/v1/kyc/iban', advanced, key)).toMatchObject({ status: 200 });
    expect(
      await inquire('/v1/kyc/iban', { iban: 'IR820540102680020817909002' }, { 'x-api-key': `${API_KEY}-shahkar-only` }),
    ).toMatchObject({ status: 403, body: { code: 'forbidden' } });

    const token = await mintToken(port, '--scope', 'kyc:shahkar', '--sub', 'user-42');
    const bearer = { authorization: `Bearer ${token}` };
    expect(await inquire('/v1/kyc/shahkar', { nationalCode: '0499370899', mobileNumber }, bearer)).toMatchObject({
      status: 200,
      body: { data: { isMatch: true } },
    });
    expect(await inquire('/v1/kyc/iban', { iban: 'IR820540102680020817909002' }, bearer)).toMatchObject({
      status: 403,
    });
    // --help, and a mistyped option: the usage, never a stack (exit 2 for the mistake).
    expect(await mintToken(port, '--help')).toMatch(/^Usage: .*sandbox:jwt[\s\S]*--scope/);
    const mistyped = mintToken(port, '--scoep', 'kyc:shahkar');
    await expect(mistyped).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/'--scoep'[\s\S]*\nUsage: /),
    });
    await expect(mistyped).rejects.toMatchObject({ stderr: expect.not.stringContaining('    at ') });

    const { version } = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { version: string };
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics.split('\n')[0]).toMatch(/^# HELP vgw_build_info /);
    expect(metrics).toContain(`vgw_build_info{version="${version}"`);

    // npm test started beside this running sandbox (globalSetup, then globalTeardown): its ledger's
    // files are not a change made by the tests, but a file a test leaves, even an ignored one, is.
    const runStart = treeState(repo)!;
    expect(treeChanges(treeBefore, runStart)).toContainEqual(expect.stringMatching(/^\+ !! \.data\/ledger\/pglite\//));
    const ledgers = await ledgersInUse(repo, runStart);
    expect(ledgers).toEqual(['.data/ledger/', '.data/sandbox-store-encryption-key']);
    writeFileSync(join(repo, 'dump.rdb'), 'REDIS0011');
    mkdirSync(join(repo, '.data', 'reports'));
    writeFileSync(join(repo, '.data', 'reports', 'run.json'), '{}');
    expect(runChanges(runStart, treeState(repo)!, ledgers)).toEqual(['+ !! .data/reports/run.json', '+ !! dump.rdb']);

    // The receiver verified and printed the first inquiry's event (a moment after it settled)...
    const settled = `"trackId":"${mismatch.body.trackId as string}"`;
    if (!received.includes(settled))
      await nextEvent(receiver.stdout!, 'data', () => received.includes(settled), 30_000);
    expect(received).toMatch(new RegExp(`verified inquiry\\.settled webhook-id=\\S+ \\{[^\\n]*${settled}`));
    // ...and refuses a delivery signed with another secret, printing nothing of it.
    const forged = JSON.stringify({ type: 'inquiry.settled', timestamp: new Date().toISOString(), data: {} });
    const at = new Date();
    const refused = await fetch(hookUrl, {
      method: 'POST',
      body: forged,
      headers: {
        'content-type': 'application/json',
        'webhook-id': 'msg_forged',
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).sign(
          'msg_forged',
          at,
          forged,
        ),
      },
    });
    expect(refused.status).toBe(400);
    const told = () => received.includes('refused a delivery (400)');
    if (!told()) await nextEvent(receiver.stderr!, 'data', told);
    expect(received).not.toContain('msg_forged');
    const receiverExited = nextEvent<number | null>(receiver, 'exit');
    receiver.kill('SIGTERM');
    expect(await receiverExited).toBe(0);

    process.kill(npm.pid!, 'SIGTERM');
    await exited;
    // Stopped, its ledger is nobody's: from now on its files would count.
    expect(await ledgersInUse(repo, treeState(repo)!)).toEqual([]);
    await expect(fetch(`http://127.0.0.1:${port}/health/live`)).rejects.toThrow();
    await expect(fetch(`http://127.0.0.1:${simulatorPort}/__simulator/state`)).rejects.toThrow();
    expect(groupAlive(npm.pid!)).toBe(false);
    // Its signing key went with it: no token for a sandbox that no longer runs.
    await expect(mintToken(port)).rejects.toMatchObject({ stderr: expect.stringContaining('start the sandbox first') });
  }, 150_000);
});
