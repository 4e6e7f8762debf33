import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Where each peer store lives: a folder of its own with its own lock file, outside the workspace's install. */
const PEERS_DIR = fileURLToPath(new URL('../peers/', import.meta.url));

/** Peers the benchmark compares with; each one's folder is `peers/<name>`. */
export const PEER_NAMES = ['emmett-sqlite', 'emmett-postgresql'] as const;
export type PeerName = (typeof PEER_NAMES)[number];

/** The folder of `peer`. */
export function peerDirectory(peer: PeerName): string {
  return `${PEERS_DIR}${peer}/`;
}

/** True when `peer`'s dependencies are installed in its folder. */
export function peerInstalled(peer: PeerName): boolean {
  return existsSync(`${peerDirectory(peer)}node_modules`);
}

/**
 * Installs `peer` from its own lock file (`npm ci` in its folder), printing npm's output on stderr.
 * Returns why it failed, or undefined once installed.
 */
export function installPeer(peer: PeerName): string | undefined {
  if (peerInstalled(peer)) return undefined;
  process.stderr.write(`bench: installing the ${peer} peer once (npm ci in ${peerDirectory(peer)})\n`);
  // npm's own stdout would interleave with the report: send both of its streams to our stderr.
  const result = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: peerDirectory(peer), stdio: ['ignore', 2, 2] });
  if (result.status === 0) return undefined;
  return result.error ? result.error.message : `npm ci exited with ${result.status ?? result.signal}`;
}

/**
 * Imports the module `file` of `peer` (its adapter to our port), installing the peer first when `install` is
 * true. Answers `{ unavailable }` with one line saying why when the peer is not installed or does not load.
 */
export async function loadPeer<T>(peer: PeerName, file: string, install: boolean): Promise<T | { unavailable: string }> {
  if (install) {
    const failed = installPeer(peer);
    if (failed !== undefined) return { unavailable: `n/a (peer install failed: ${failed})` };
  } else if (!peerInstalled(peer)) {
    return { unavailable: 'n/a (peer not installed: npm run bench:peers)' };
  }
  try {
    return (await import(new URL(file, `file://${peerDirectory(peer)}`).href)) as T;
  } catch (error) {
    return { unavailable: `n/a (peer fails to load: ${error instanceof Error ? error.message.split('\n')[0] : String(error)})` };
  }
}
