import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The newest PostgreSQL major version installed the Debian way (its server under /usr/lib/postgresql), if any. */
function installedVersion(): string | undefined {
  try {
    return readdirSync('/usr/lib/postgresql')
      .filter((name) => /^\d+$/.test(name) && existsSync(`/usr/lib/postgresql/${name}/bin/postgres`))
      .sort((a, b) => Number(b) - Number(a))[0];
  } catch {
    return undefined;
  }
}
const VERSION = installedVersion() ?? '15';

/** Why a cluster of the tests' own cannot be made here, or undefined when it can. */
export async function clusterUnavailable(): Promise<string | undefined> {
  try {
    await run('pg_lsclusters', ['--help']);
  } catch {
    return "Debian's PostgreSQL wrappers (pg_createcluster, pg_ctlcluster) are not installed";
  }
  if (installedVersion() === undefined) return 'no PostgreSQL server is installed under /usr/lib/postgresql';
  if (process.getuid?.() !== 0) return 'making a cluster with the wrappers needs root';
  return undefined;
}

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** A PostgreSQL cluster the test made (trust auth on 127.0.0.1), to restart and stop at will. */
export interface TestCluster {
  /** A URL of the cluster's `postgres` database. */
  readonly url: string;
  start(): Promise<void>;
  /** Stops at once, as a crash would, and starts again. */
  restartImmediate(): Promise<void>;
  stop(): Promise<void>;
  /** Stops and deletes the cluster; safe to call more than once. */
  drop(): Promise<void>;
}

/** Creates and starts a fresh cluster of its own on a free port. */
export async function createCluster(): Promise<TestCluster> {
  const name = `sf_follow_${randomBytes(4).toString('hex')}`;
  const port = await freePort();
  const ctl = (...args: string[]) => run('pg_ctlcluster', ['--skip-systemctl-redirect', VERSION, name, ...args]);
  let dropped = false;
  const drop = async () => {
    if (dropped) return;
    dropped = true;
    await run('pg_dropcluster', [VERSION, name, '--stop']);
  };
  // Without `--auth=trust` a TCP client of the new cluster is asked for a password; without syncs it is made faster.
  await run('pg_createcluster', [VERSION, name, '--port', String(port), '-o', 'fsync=off', '--', '--auth=trust', '--no-sync']);
  const cluster: TestCluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start: async () => void (await ctl('start')),
    restartImmediate: async () => void (await ctl('restart', '-m', 'immediate')),
    stop: async () => void (await ctl('stop', '-m', 'immediate')),
    drop,
  };
  try {
    await cluster.start();
  } catch (error) {
    await drop().catch(() => undefined);
    throw error;
  }
  return cluster;
}
