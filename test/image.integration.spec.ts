/**
 * Where buildah cannot run (not installed, or not root; CI always has it), the container image's
 * runtime stage is replayed without a container engine (docs/deploying.md). What the
 * Dockerfile's runtime stage holds is rebuilt here the same way: production dependencies
 * (`npm ci --omit=dev`), slimmed by the script the Dockerfile runs, and `dist/` compiled with
 * tsconfig.build.json. That tree is checked (no TypeScript, test code, simulator or bench; its
 * size printed), then started as the image starts it (`node dist/main.js` with the Dockerfile's
 * NODE_OPTIONS, as the Dockerfile's numeric user when the test runs as root): it must serve its
 * probes and an inquiry, write nothing into its own tree, and exit 0 on SIGTERM.
 *
 * Where buildah runs, the Dockerfile itself is built with it (no daemon, `--isolation chroot`)
 * on a Node base image assembled from this machine's own Node (no registry is reachable for
 * `node:…-slim`): the image's configuration is checked (numeric user, exec-form CMD, workdir,
 * NODE_OPTIONS, the port), and its root filesystem is started as the image's user with the
 * image's CMD, environment and workdir (`chroot`, since no container runtime starts here), with
 * the replay's checks: production code only in /app, JSON logs through the shutdown sequence,
 * nothing written under /app. The Dockerfile's text is checked either way.
 *
 * Not proven here: the real base image (its Node build and libraries), and container isolation
 * (namespaces, a read-only root) as Kubernetes applies it.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { SHAHKAR, UPSTREAM_PASSWORD, UPSTREAM_USERNAME } from './support/fixtures.js';
import { freePort } from './support/redis-server.js';
import { TEST_API_KEYS, TEST_CLIENTS, callGateway } from './support/gateway.js';
import { START_BOUND_MS, nextEvent, withinStartBound } from './support/events.js';
import { assembleNodeBase, buildah } from './support/buildah.js';
import { buildGateway } from './support/gateway-process.js';
import { describeWith } from './support/tools.js';

const ROOT = new URL('..', import.meta.url).pathname;
const DOCKERFILE = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const RUNTIME_STAGE = DOCKERFILE.slice(DOCKERFILE.indexOf(' AS runtime'));

/** Every file under `dir`, relative to it. */
function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1));
}

/**
 * Waits for the started gateway process to listen (Nest's own log line), checks it serves
 * readiness and an inquiry, sends SIGTERM and expects exit 0 with nothing on stderr.
 */
async function serveAndStop(gateway: ChildProcess, port: number): Promise<{ stdout: string; metrics: string }> {
  let stdout = '';
  let metrics: string;
  let stderr = '';
  gateway.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  gateway.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // Listened for from the start, so that an early exit is never missed; bounded from SIGTERM on.
  const exited = new Promise<number | null>((resolve) => gateway.once('exit', resolve));
  try {
    await nextEvent(gateway.stdout!, 'data', () => stdout.includes('successfully started'), START_BOUND_MS);
    const url = `http://127.0.0.1:${port}`;
    expect((await fetch(`${url}/health/live`)).status).toBe(200);
    // Ready once the embedded ledger is open and migrated in its worker: that line awaited, then asked.
    const opened = () => stdout.includes('embedded ledger open and migrated');
    if (!opened()) await nextEvent(gateway.stdout!, 'data', opened, START_BOUND_MS);
    expect((await fetch(`${url}/health/ready`)).status).toBe(200);
    // The console's files and its chart library (docs/operations.md, "The console") are in the image.
    for (const file of ['/console', '/console/console.js', '/console/vendor/uplot.js']) {
      expect((await fetch(`${url}${file}`)).status).toBe(200);
    }
    const inquiry = await callGateway(url, 'POST', '/v1/kyc/shahkar', { apiKey: TEST_CLIENTS.full.key, json: SHAHKAR });
    expect(inquiry.status).toBe(200);
    metrics = await (await fetch(`${url}/metrics`)).text();
  } finally {
    gateway.kill('SIGTERM');
  }
  // The shutdown's own bound: its steps take a few seconds (src/http/shutdown-sequence.ts).
  expect(await withinStartBound(exited, 'exit after SIGTERM', 30_000)).toBe(0);
  expect(stderr).toBe('');
  return { stdout, metrics };
}

/**
 * The runtime tree at `app` (the image's /app, or its replay) holds production code only: no
 * TypeScript, test tooling, tests, simulator or bench. Prints its size.
 */
function expectProductionOnly(app: string): void {
  const modules = readdirSync(join(app, 'node_modules'));
  for (const name of ['typescript', 'jest', 'ts-jest', 'autocannon', 'eslint', 'axios'])
    expect(modules).not.toContain(name);
  expect(existsSync(join(app, 'node_modules/@nestjs/testing'))).toBe(false);
  const dist = files(join(app, 'dist'));
  expect(dist).toContain('main.js');
  expect(dist.filter((file) => /spec|simulator|bench|sandbox/.test(file))).toEqual([]);
  const size = spawnSync('du', ['-sm', join(app, 'node_modules'), join(app, 'dist')], { encoding: 'utf8' }).stdout;
  console.log(`image runtime tree (MiB):\n${size}`);
}

/**
 * What the gateway wrote from start to exit: every line JSON (the shutdown included), the last
 * one, written just before exit, not lost in the logger's buffer; the signal's line, then the
 * shutdown sequence's steps (src/http/shutdown-sequence.ts), then 'stopped'.
 */
function expectJsonLogWithShutdown(stdout: string): void {
  const lines = stdout.trim().split('\n');
  for (const line of lines) expect(() => JSON.parse(line) as unknown).not.toThrow();
  const shutdown = lines
    .map((line) => JSON.parse(line) as { context?: string; msg?: string })
    .filter((line) => line.context === 'Shutdown')
    .map((line) => line.msg);
  expect(shutdown[0]).toBe('SIGTERM: draining, then exiting');
  expect(shutdown.slice(1, -1).every((msg) => msg?.startsWith('step: '))).toBe(true);
  expect(shutdown.at(-1)).toBe('stopped');
  expect(JSON.parse(lines[lines.length - 1])).toMatchObject({ context: 'Shutdown', msg: 'stopped' });
}

function run(command: string, args: string[], cwd: string): void {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')}: ${result.stderr || result.stdout}`);
}

describe('the Dockerfile, as written', () => {
  it('has no `# syntax=` line (BuildKit would fetch a frontend from a registry) and takes the release build arguments', () => {
    expect(DOCKERFILE).not.toMatch(/^#\s*syntax=/im);
    for (const arg of ['VERSION', 'BUILD_COMMIT', 'BUILD_DATE']) expect(RUNTIME_STAGE).toContain(`ARG ${arg}`);
    expect(RUNTIME_STAGE).toContain('ENV BUILD_COMMIT=${BUILD_COMMIT}');
  });

  it('declares what the checks below rely on: a numeric user, node as PID 1 on dist/main.js, NODE_OPTIONS', () => {
    expect(RUNTIME_STAGE).toMatch(/^USER \d+:\d+$/m);
    expect(RUNTIME_STAGE).toMatch(/^CMD \["node", "dist\/main\.js"\]$/m);
    expect(RUNTIME_STAGE).toMatch(/^ENV NODE_OPTIONS="[^"]+"$/m);
    expect(RUNTIME_STAGE).toMatch(/^COPY --from=build \/app\/node_modules \.\/node_modules$/m);
    expect(DOCKERFILE).toContain('sh scripts/slim-runtime-deps.sh');
    expect(DOCKERFILE).toContain('cpSync("src/console/assets", "dist/console/assets"');
  });
});

// With buildah (always in CI) the built image's own tree and root filesystem get these checks
// (below), so the replay, a second npm ci and a second gateway start, runs only where buildah
// cannot: a machine without it, or a run not as root.
const BUILDAH = buildah();

if (BUILDAH === null)
  describe('the image runtime stage, replayed', () => {
    let app: string;
    let node: string;
    let sim: UpstreamSimulator;

    beforeAll(async () => {
      app = mkdtempSync(join(tmpdir(), 'vgw-image-'));
      // Readable by the image's numeric user, as the image's root-owned, read-only /app is.
      chmodSync(app, 0o755);
      // The image's node sits in /usr/local/bin, executable by every user. The running node may
      // sit in root's home (CI fetches it into ~/.cache), which uid 10001 cannot enter: copy it
      // beside the tree.
      node = join(mkdtempSync(join(tmpdir(), 'vgw-image-node-')), 'node');
      chmodSync(dirname(node), 0o755);
      copyFileSync(process.execPath, node);
      chmodSync(node, 0o755);
      for (const file of ['package.json', 'package-lock.json']) cpSync(join(ROOT, file), join(app, file));
      run('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund'], app);
      run('sh', [join(ROOT, 'scripts/slim-runtime-deps.sh'), app], ROOT);
      // `tsc -p tsconfig.build.json`, shared with the spec files that start gateway processes.
      cpSync(buildGateway(), join(app, 'dist'), { recursive: true });
      // As the Dockerfile does: the console's page files beside the module that serves them.
      cpSync(join(ROOT, 'src/console/assets'), join(app, 'dist/console/assets'), { recursive: true });
      sim = new UpstreamSimulator();
      await sim.start();
    }, 240_000);

    afterAll(async () => {
      await sim?.stop();
      rmSync(app, { recursive: true, force: true });
      rmSync(dirname(node), { recursive: true, force: true });
    });

    it('holds production code only: no TypeScript, test tooling, tests, simulator or bench', () => {
      expectProductionOnly(app);
    });

    it('starts as the image does, serves probes and an inquiry, writes nothing, and exits 0 on SIGTERM', async () => {
      const before = files(app).sort();
      const port = await freePort();
      const nodeOptions = /^ENV NODE_OPTIONS="([^"]+)"$/m.exec(RUNTIME_STAGE)![1];
      const asImageUser = process.getuid?.() === 0 ? { uid: 10001, gid: 10001 } : {};
      // The image's ledger volume (LEDGER_DATA_DIR), outside the read-only tree, the user's own.
      const ledger = mkdtempSync(join(tmpdir(), 'vgw-image-ledger-'));
      if (asImageUser.uid !== undefined) chownSync(ledger, asImageUser.uid, asImageUser.gid);
      const gateway: ChildProcess = spawn(node, ['dist/main.js'], {
        cwd: app,
        ...asImageUser,
        env: {
          PATH: process.env.PATH,
          NODE_ENV: 'production',
          NODE_OPTIONS: nodeOptions,
          PORT: String(port),
          UPSTREAM_BASE_URL: sim.baseUrl,
          UPSTREAM_USERNAME,
          UPSTREAM_PASSWORD,
          API_KEYS: TEST_API_KEYS,
          LOG_LEVEL: 'info',
          LEDGER_DATA_DIR: ledger,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      // Every line it wrote is JSON (the shutdown included), and the last one, written just
      // before exit, was not lost in the logger's buffer.
      const { stdout } = await serveAndStop(gateway, port).finally(() =>
        rmSync(ledger, { recursive: true, force: true }),
      );
      expectJsonLogWithShutdown(stdout);
      expect(files(app).sort()).toEqual(before);
    });
  });

describeWith(BUILDAH, "the Dockerfile, built with buildah on a base assembled from this machine's Node", (run) => {
  const tag = `${process.pid}-${Date.now()}`;
  let dir: string;
  let sim: UpstreamSimulator;
  let base = '';
  let image = '';
  let container = '';
  let root = '';
  let config: {
    User: string;
    Env: string[];
    WorkingDir: string;
    Cmd: string[];
    ExposedPorts?: Record<string, object>;
    Volumes?: Record<string, object>;
    Labels?: Record<string, string>;
  };
  // What a release build passes (docs/releasing.md): the version, the commit, the date.
  const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const COMMIT = '0123456789abcdef0123456789abcdef01234567';
  const CREATED = '2026-11-23T00:00:00Z';

  // A chroot step gets 1 024 open files by default and npm ci sometimes needs more (EMFILE): this
  // process's own hard limit (more is not permitted without CAP_SYS_RESOURCE).
  const hardLimit = execFileSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).trim();
  const openFilesLimit = /^\d+$/.test(hardLimit) ? hardLimit : '1048576';

  /** `buildah bud` of the Dockerfile on the assembled base, with these build arguments. */
  const build = (args: Record<string, string>, ...options: string[]) =>
    run(
      'bud',
      '--isolation',
      'chroot',
      '--ulimit',
      `nofile=${openFilesLimit}:${openFilesLimit}`,
      ...Object.entries({ NODE_IMAGE: base, ...args }).flatMap(([name, value]) => ['--build-arg', `${name}=${value}`]),
      ...options,
      ROOT,
    );

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vgw-buildah-'));
    base = assembleNodeBase(run, dir, `localhost/vgw-node-base:${tag}`);
    image = `localhost/verification-gateway:${tag}`;
    const started = Date.now();
    build({ VERSION, BUILD_COMMIT: COMMIT, BUILD_DATE: CREATED }, '-t', image);
    const sizes = run('images', '--format', '{{.Name}}:{{.Tag}} {{.Size}}');
    console.log(`buildah bud: ${Math.round((Date.now() - started) / 1000)} s; images:\n${sizes}`);
    const inspected = JSON.parse(run('inspect', '--type', 'image', image)) as { OCIv1: { config: typeof config } };
    config = inspected.OCIv1.config;
    container = run('from', image);
    root = run('mount', container);
    sim = new UpstreamSimulator();
    await sim.start();
  }, 300_000);

  afterAll(async () => {
    await sim?.stop();
    if (!image) return;
    if (container) {
      run('umount', container);
      run('rm', container);
    }
    run('rmi', '-f', image, `localhost/vgw-node-base:${tag}`);
    rmSync(dir, { recursive: true, force: true });
  });

  it('builds an image that runs as a numeric user, node as PID 1 on dist/main.js, with NODE_OPTIONS', () => {
    expect(config).toMatchObject({ User: '10001:10001', WorkingDir: '/app', Cmd: ['node', 'dist/main.js'] });
    expect(config.Env).toEqual(
      expect.arrayContaining([
        'NODE_ENV=production',
        expect.stringMatching(/^NODE_OPTIONS=--max-old-space-size=\d+ --max-semi-space-size=\d+$/),
      ]),
    );
    expect(Object.keys(config.ExposedPorts ?? {})).toEqual(['3000/tcp']);
    // The embedded ledger on a volume the user owns: the root file system stays read-only.
    expect(config.Env).toContain('LEDGER_DATA_DIR=/var/lib/verification-gateway/ledger');
    expect(Object.keys(config.Volumes ?? {})).toEqual(['/var/lib/verification-gateway/ledger']);
    const app = readdirSync(join(root, 'app')).sort();
    expect(app).toEqual(['dist', 'node_modules', 'package.json']);
    expect(existsSync(join(root, 'app/src'))).toBe(false);
  });

  it('holds production code only: no TypeScript, test tooling, tests, simulator or bench', () => {
    expectProductionOnly(join(root, 'app'));
  });

  it("starts from its root filesystem as the image's user and CMD, serves, writes nothing in /app, and exits 0 on SIGTERM", async () => {
    const before = files(join(root, 'app')).sort();
    const port = await freePort();
    const env = [
      ...config.Env,
      `PORT=${port}`,
      `UPSTREAM_BASE_URL=${sim.baseUrl}`,
      `UPSTREAM_USERNAME=${UPSTREAM_USERNAME}`,
      `UPSTREAM_PASSWORD=${UPSTREAM_PASSWORD}`,
      `API_KEYS=${TEST_API_KEYS}`,
    ];
    // A container runtime mounts a volume at the image's VOLUME (LEDGER_DATA_DIR), owned as the
    // image left the path; the chroot gets the same (a no-op where the committed image kept it).
    // Its parents are the image's: a root-owned 0700 parent failed this test with EACCES.
    const ledgerDir = join(root, '/var/lib/verification-gateway/ledger');
    mkdirSync(ledgerDir, { recursive: true, mode: 0o700 });
    chownSync(ledgerDir, 10001, 10001);
    // chroot into the image's filesystem as its user; env sets the workdir and environment and
    // execs the CMD, so node is the process that receives the signal.
    const gateway = spawn(
      'chroot',
      [`--userspec=${config.User}`, root, '/usr/bin/env', '-i', `--chdir=${config.WorkingDir}`, ...env, ...config.Cmd],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const { stdout, metrics } = await serveAndStop(gateway, port);
    expectJsonLogWithShutdown(stdout);
    expect(files(join(root, 'app')).sort()).toEqual(before);
    // The build arguments reach the metric: the image names its commit.
    expect(metrics).toMatch(
      new RegExp(
        `^vgw_build_info\\{version="${VERSION.replace(/\./g, '\\.')}",commit="${COMMIT}",node="v[0-9.]+"\\} 1$`,
        'm',
      ),
    );
  });

  it('carries the standard OCI labels from the build arguments', () => {
    expect(config.Labels).toMatchObject({
      'org.opencontainers.image.title': 'verification-gateway',
      'org.opencontainers.image.version': VERSION,
      'org.opencontainers.image.revision': COMMIT,
      'org.opencontainers.image.created': CREATED,
    });
    expect(config.Labels?.['org.opencontainers.image.source']).toMatch(/^https:\/\//);
  });

  it('refuses a VERSION build argument that is not package.json’s version', () => {
    // The check is the build stage's first RUN: it fails before npm ci, in a second or two.
    expect(() => build({ VERSION: '9.9.9' }, '--target', 'build')).toThrow(
      `VERSION=9.9.9 but package.json has ${VERSION}`,
    );
  });
});
