import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fileStore } from './index.js';
import { ChildOutput, ChildPool, collect, freshDir, logLines, random, randomStream, startChild } from './test-support.fixture.js';

const KILLS = Number(process.env.SESSIONFOLD_CRASH_BLOB_KILLS ?? 8);
const SHA256_NAME = /^[0-9a-f]{64}$/;

/** The blobs each stream's owner lines in the log name. */
function ownerLines(dir: string): Map<string, Set<string>> {
  const owners = new Map<string, Set<string>>();
  for (const { payload } of logLines(dir)) {
    if (typeof payload.blob !== 'string') continue;
    const stream = payload.stream as string;
    owners.set(stream, (owners.get(stream) ?? new Set()).add(payload.blob));
  }
  return owners;
}

/** The blob files of the store in `dir` (their sha256 names; temporaries of a cut-short write are not blobs). */
function blobFiles(dir: string): string[] {
  try {
    return readdirSync(join(dir, 'blobs')).filter((name) => SHA256_NAME.test(name));
  } catch {
    return [];
  }
}

describe('SIGKILL while storing blobs', () => {
  it(`never leaves a blob nobody owns or half a blob, and every acknowledged blob stays owned and readable (${KILLS} kills)`, async () => {
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
        // As the crash left it, before any writer repairs: every blob file has an owner line before it, and its
        // bytes are whole (a cut-short write is a temporary, never a file under the blob's name).
        const owned = new Set([...ownerLines(dir).values()].flatMap((shas) => [...shas]));
        for (const sha of blobFiles(dir)) {
          expect(owned, `kill ${kill}: blob ${sha} has an owner line`).toContain(sha);
          expect(
            createHash('sha256')
              .update(readFileSync(join(dir, 'blobs', sha)))
              .digest('hex'),
            `kill ${kill}: blob ${sha} is whole`,
          ).toBe(sha);
        }
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
        // Reopened by a writer, the store is sound: no owned blob missing, nothing damaged.
        const writer = await fileStore({ directory: dir });
        try {
          const report = await writer.verify();
          expect(
            report.problems.filter((problem) => problem.severity === 'error'),
            `kill ${kill}`,
          ).toEqual([]);
          for (const stream of streams) {
            for (const sha of await collect(writer.blobs(stream))) expect(await writer.getBlob(sha), `kill ${kill}: listed ${sha}`).toBeDefined();
          }
        } finally {
          await writer.close();
        }
      }
    } finally {
      await pool.dispose();
    }
  });
});
