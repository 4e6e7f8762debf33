import { appendFileSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EventStore, VerifyProblem } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { freshDir } from './test-support.fixture.js';

/** A closed store: two streams of three events, one compacted, a blob; returns its directory. */
async function written(): Promise<string> {
  const directory = freshDir();
  const store = await fileStore({ directory });
  await store.append(
    'a',
    [1, 2, 3].map((n) => ({ type: 'N', data: { n } })),
    { expectedRevision: 'no_stream' },
  );
  await store.append(
    'b',
    [1, 2, 3].map((n) => ({ type: 'N', data: { n } })),
    { expectedRevision: 'no_stream' },
  );
  await store.append('c', [{ type: 'N', data: 0 }], { expectedRevision: 'no_stream' });
  await store.compact('c', { revision: 1, state: { n: 0 }, identity: { stream: 'c', schemaVersion: 1 } });
  await store.putBlob('a', new Uint8Array([1, 2, 3]));
  await store.close();
  return directory;
}

/**
 * Opens a read-only view of the clean store, damages it with `damage`, and verifies through the view: the
 * view opened before the damage (opening checks every line too), and it never touches the files.
 */
async function verifyAfter(directory: string, damage: () => void): Promise<VerifyProblem[]> {
  const store: EventStore = await fileStore({ directory, readOnly: true });
  damage();
  const before = snapshotOf(directory);
  try {
    return (await store.verify!()).problems;
  } finally {
    await store.close();
    expect(snapshotOf(directory)).toEqual(before);
  }
}

/** Every file's bytes, to show that verify wrote nothing. */
function snapshotOf(directory: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const entry of readdirSync(directory, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) files[join(entry.parentPath, entry.name)] = readFileSync(join(entry.parentPath, entry.name)).toString('base64');
  }
  return files;
}

const where = (p: VerifyProblem) => `${p.severity} ${p.code} ${p.file?.split('/').slice(-2).join('/')}:${p.line ?? ''}`;

describe('verify', () => {
  it('a clean store has no problems, on the writer and on a read-only view', async () => {
    const directory = await written();
    expect(await verifyAfter(directory, () => undefined)).toEqual([]);
    const writer = await fileStore({ directory });
    const report = await writer.verify!();
    await writer.close();
    expect(report).toEqual({ ok: true, problems: [], checked: { streams: 3, records: 6, snapshots: 1, blobs: 1 } });
  });

  it('a flipped byte is an error naming the file and line', async () => {
    const directory = await written();
    const found = await verifyAfter(directory, () => {
      const path = join(directory, 'streams', 'b.jsonl');
      const bytes = readFileSync(path);
      const second = bytes.indexOf(0x0a) + 1;
      bytes[second + 70] = (bytes[second + 70] as number) ^ 0x01;
      writeFileSync(path, bytes);
    });
    expect(found.map(where)).toEqual(['error damaged_record streams/b.jsonl:2']);
  });

  it('a line moved into another journal is an error naming where it landed', async () => {
    const directory = await written();
    const found = await verifyAfter(directory, () => {
      const [from, to] = [join(directory, 'streams', 'a.jsonl'), join(directory, 'streams', 'b.jsonl')];
      const lines = readFileSync(from, 'utf8').split('\n');
      writeFileSync(from, `${lines.slice(0, 2).join('\n')}\n`);
      appendFileSync(to, `${lines[2]}\n`);
    });
    // The moved line ended a batch of three: what is left of the batch would read as a write cut short, but the
    // store knows the batch was acknowledged.
    expect(found.map(where)).toEqual(['error damaged_record streams/a.jsonl:1', 'error damaged_record streams/b.jsonl:4']);
  });

  it('lines swapped within a journal are an error naming the line', async () => {
    const directory = await written();
    const found = await verifyAfter(directory, () => {
      const path = join(directory, 'streams', 'a.jsonl');
      const [one, two, three] = readFileSync(path, 'utf8').split('\n');
      writeFileSync(path, `${one}\n${three}\n${two}\n`);
    });
    expect(found.map(where)).toEqual(['error revision_gap streams/a.jsonl:2']);
  });

  it('a missing blob is an error naming its owners file and line; an orphan blob is a warning naming the blob', async () => {
    const directory = await written();
    const found = await verifyAfter(directory, () => {
      const [sha] = readdirSync(join(directory, 'blobs'));
      renameSync(join(directory, 'blobs', sha as string), join(directory, 'blobs', 'f'.repeat(64)));
    });
    expect(found.map(where)).toEqual([
      'error blob_missing owners/a.jsonl:1',
      `error blob_hash blobs/${'f'.repeat(64)}:`,
      `warning blob_orphan blobs/${'f'.repeat(64)}:`,
    ]);
  });

  it('a blob whose bytes changed is an error naming the blob', async () => {
    const directory = await written();
    const [sha] = readdirSync(join(directory, 'blobs'));
    const found = await verifyAfter(directory, () => writeFileSync(join(directory, 'blobs', sha as string), new Uint8Array([9])));
    expect(found.map(where)).toEqual([`error blob_hash blobs/${sha}:`]);
  });

  it('a torn tail is a warning naming the line it would be', async () => {
    const directory = await written();
    const found = await verifyAfter(directory, () => {
      appendFileSync(join(directory, 'streams', 'a.jsonl'), '0123abc {"half');
    });
    expect(found.map(where)).toEqual(['warning torn_tail streams/a.jsonl:4']);
  });

  it('a damaged snapshot is an error naming the file and line', async () => {
    const directory = await written();
    const found = await verifyAfter(directory, () => {
      const snapshot = join(directory, 'streams', 'c.snapshot.json');
      const bytes = readFileSync(snapshot);
      bytes[bytes.length - 3] = (bytes[bytes.length - 3] as number) ^ 0x01;
      writeFileSync(snapshot, bytes);
    });
    expect(found.map(where)).toEqual(['error damaged_snapshot streams/c.snapshot.json:1']);
  });

  it("stops inside a long journal when its signal fires, and rejects with the signal's reason", async () => {
    const directory = freshDir();
    const store = await fileStore({ directory });
    for (let n = 0; n < 40; n++) {
      await store.append(
        'long',
        Array.from({ length: 5000 }, (_, i) => ({ type: 'E', data: { i, text: 'a line of some length to check' } })),
        { expectedRevision: n === 0 ? 'no_stream' : n * 5000 },
      );
    }
    const controller = new AbortController();
    const reason = new Error('enough');
    setTimeout(() => controller.abort(reason), 5);
    await expect((store.verify as NonNullable<typeof store.verify>)({ signal: controller.signal })).rejects.toBe(reason);
    await store.close();
  });
});
