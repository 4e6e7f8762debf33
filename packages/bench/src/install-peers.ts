import { installPeer, PEER_NAMES } from './peers.js';

// `npm run bench:peers`: installs every peer store from its own lock file, so the benchmark can compare with it.
let failed = false;
for (const peer of PEER_NAMES) {
  const why = installPeer(peer);
  if (why !== undefined) {
    console.error(`bench: the ${peer} peer did not install: ${why}`);
    failed = true;
  } else {
    console.error(`bench: the ${peer} peer is installed`);
  }
}
process.exitCode = failed ? 1 : 0;
