import { describe, expect, it } from 'vitest';
import { BlobStore } from './blob-store.js';
import { nodeFileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { Layout } from './layout.js';
import { ChildOutput, ChildPool, collect, freshDir, random, randomStream, startChild } from './test-support.fixture.js';

const KILLS = Number(process.env.SESSIONFOLD_CRASH_BLOB_KILLS ?? 8);

describe('SIGKILL while storing blobs', () => {
  it(`never leaves a blob nobody owns, and every acknowledged blob stays owned and readable (${KILLS} kills)`, async () => {
    const seed = Number(process.env.SESSIONFOLD_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
    console.log(`crash-blobs seed ${seed} (SESSIONFOLD_CRASH_SEED to repeat)`);
    const rand = random(seed);
    const dir = freshDir();
    const streams = [randomStream('a'), randomStream('b'), randomStream('c')];
    const acked = new Map<string, Set<string>>(streams.map((stream) => [stream, new Set()]));
    const pool = new ChildPool(() => new ChildOutput(startChild('blob-putter', [])), 2);
    try {
      for (let kill = 0; kill < KILLS; kill++) {
        const child = pool.take();
        child.child.stdin?.write(`go ${dir} ${streams.join(',')}\n`);
        await child.waitFor((line) => line.startsWith('ack '));
        await new Promise((resolve) => setTimeout(resolve, Math.floor(rand() * 30)));
        await child.kill();
        for (const line of child.lines.filter((l) => l.startsWith('ack '))) {
          const [, stream, sha] = line.split(' ') as [string, string, string];
          acked.get(stream)?.add(sha);
        }
        // As the crash left it, before any writer repairs: every blob file has an owner record.
        const blobs = new BlobStore(nodeFileSystem, new Layout(dir));
        await blobs.load(false);
        expect(await blobs.orphans(), `kill ${kill}`).toEqual([]);
        const view = await fileStore({ directory: dir, readOnly: true });
        try {
          for (const stream of streams) {
            const listed = await collect(view.blobs(stream));
            for (const sha of acked.get(stream) ?? []) expect(listed, `kill ${kill}: acknowledged ${stream} ${sha}`).toContain(sha);
            for (const sha of listed) expect(await view.getBlob(sha), `kill ${kill}: listed ${sha}`).toBeDefined();
          }
        } finally {
          await view.close();
        }
      }
    } finally {
      await pool.dispose();
    }
  });
});
