import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CorruptionError, type RecordedEvent } from '@sessionfold/core/kernel';
import { nodeFileSystem } from '../fs-layer.js';
import { eventPayload, frameLine } from '../journal-codec.js';
import { fileStore } from '../index.js';
import { collect, freshDir } from '../test-support.fixture.js';
import { contents, copyOfFixture, expectedOf, fixturePath, foldLines, withoutTime } from './fold.fixture.js';
import { legacyLogLines } from './legacy-log.js';

const fsl = nodeFileSystem;

describe('legacyLogLines of the checked-in stores', () => {
  it('format 3: the lines fold to exactly what that release read (streams, reads, feed, blobs)', async () => {
    const dir = copyOfFixture('format-3');
    const before = contents(dir);
    const { formatVersion, lines } = await legacyLogLines(fsl, dir);
    expect(formatVersion).toBe(3);
    const expected = expectedOf('format-3') as { streams: unknown; reads: Record<string, unknown>; feed: unknown; blobs: string[] };
    const folded = foldLines(lines);
    const reads = Object.fromEntries(Object.entries(folded.reads).map(([stream, read]) => [stream, { ...read, events: read.events.map(withoutTime) }]));
    expect({ streams: folded.streams, reads, feed: folded.feed.map(withoutTime) }).toEqual({
      streams: expected.streams,
      reads: expected.reads,
      feed: expected.feed,
    });
    expect(Object.values(folded.blobs).flat()).toEqual(expect.arrayContaining(expected.blobs));
    // Blob-owner lines come last, and reading changes nothing.
    const firstOwner = lines.findIndex((line) => line.includes('"blob":'));
    expect(lines.slice(firstOwner).every((line) => line.includes('"blob":'))).toBe(true);
    expect(contents(dir)).toEqual(before);
  });

  it('release 0.1.0: lines without a stream name are named, and fold to what 0.1.0 read (streams, feed)', async () => {
    const { formatVersion, lines } = await legacyLogLines(fsl, fixturePath('release-0.1.0'));
    expect(formatVersion).toBe(1);
    const expected = expectedOf('release-0.1.0') as { streams: unknown; feed: Record<string, unknown>[] };
    const folded = foldLines(lines);
    expect(folded.streams).toEqual(expected.streams);
    const pick = (event: RecordedEvent, like: Record<string, unknown>) =>
      Object.fromEntries(Object.keys(like).map((key) => [key, event[key as keyof RecordedEvent]]));
    expect(folded.feed.map((event, index) => pick(event, expected.feed[index] ?? {}))).toEqual(expected.feed);
    expect(folded.feed).toHaveLength(expected.feed.length);
    // The batch of ledger-1 keeps its `more` on its first line, its last line without.
    const ledger = lines.filter((line) => line.includes('"stream":"ledger-1","revision"'));
    expect(ledger.map((line) => line.includes('"more":true'))).toEqual([true, false]);
  });

  // Cross-check against the store of formats 1–3 while it still exists: delete this test with it.
  it('CROSS-CHECK WITH THE OLD STORE (delete with it): the lines fold to what the old store reads, times included', async () => {
    for (const name of ['release-0.1.0', 'format-3'] as const) {
      const dir = copyOfFixture(name);
      const folded = foldLines((await legacyLogLines(fsl, dir)).lines);
      const store = await fileStore({ directory: dir, readOnly: true });
      try {
        const streams = await collect(store.streams());
        expect(streams, name).toEqual(folded.streams);
        for (const { stream } of streams) {
          const read = await store.read(stream);
          expect({ snapshot: read.snapshot, events: await collect(read.events) }, `${name} ${stream}`).toEqual(folded.reads[stream]);
          expect(await collect(store.blobs(stream)), `${name} ${stream} blobs`).toEqual(folded.blobs[stream] ?? []);
        }
        expect(await collect(store.readAll()), name).toEqual(folded.feed);
      } finally {
        await store.close();
      }
    }
  });
});

/** A hand-made store of format 2 with the given journal text per stream. */
function storeWith(journals: Record<string, string>, extra: Record<string, string> = {}): string {
  const dir = freshDir();
  mkdirSync(join(dir, 'streams'));
  writeFileSync(join(dir, 'format.json'), frameLine(JSON.stringify({ format: 'sessionfold.file-store', formatVersion: 2 })));
  for (const [stream, text] of Object.entries(journals)) writeFileSync(join(dir, 'streams', `${stream}.jsonl`), text);
  for (const [path, text] of Object.entries(extra)) writeFileSync(join(dir, path), text);
  return dir;
}

const line = (stream: string, revision: number, position: number, more = false) =>
  frameLine(eventPayload(stream, revision, position, '2026-01-01T00:00:00.000Z', 'T', undefined, more, `{"n":${revision}}`));

describe('legacyLogLines of damaged and cut-short journals', () => {
  it('drops a torn tail as the old store does: a partial last line, and a batch whose last line never made it', async () => {
    const whole = line('a', 1, 1) + line('a', 2, 2, true) + line('a', 3, 3);
    const dir = storeWith({ a: whole + line('a', 4, 4, true) + line('a', 5, 5, true) + line('a', 6, 6).slice(0, 30), b: line('b', 1, 7) });
    const { lines } = await legacyLogLines(fsl, dir);
    expect(lines).toEqual([...whole.split(/(?<=\n)/), line('b', 1, 7)]);
  });

  it('refuses damage before the tail, a last line that lost its newline, gaps and positions used twice', async () => {
    const damaged = line('a', 1, 1).replace('"n":1', '"n":2') + line('a', 2, 2);
    const cases: Record<string, string>[] = [
      { a: damaged },
      { a: `${line('a', 1, 1)}${line('a', 2, 2).slice(0, -1)}x` },
      { a: line('a', 1, 1) + line('a', 3, 2) },
      { a: line('a', 1, 1), b: line('b', 1, 1) },
      { a: line('b', 1, 1) },
    ];
    for (const journals of cases) await expect(legacyLogLines(fsl, storeWith(journals))).rejects.toBeInstanceOf(CorruptionError);
  });

  it('leaves out what a deletion ended: leftovers of a delete cut short, and the owners of that stream', async () => {
    const sha = 'a'.repeat(64);
    const dir = storeWith(
      { a: line('a', 1, 1) + line('a', 2, 2), b: line('b', 1, 4) },
      { 'tombstones.jsonl': frameLine(JSON.stringify({ stream: 'a', revision: 2, position: 3, recordedAt: 'then' })) },
    );
    mkdirSync(join(dir, 'owners'));
    mkdirSync(join(dir, 'blobs'));
    writeFileSync(join(dir, 'blobs', sha), 'x');
    writeFileSync(join(dir, 'owners', 'a.jsonl'), frameLine(JSON.stringify({ sha256: sha })));
    writeFileSync(join(dir, 'owners', 'b.jsonl'), frameLine(JSON.stringify({ sha256: sha })) + frameLine(JSON.stringify({ sha256: 'b'.repeat(64) })));
    const folded = foldLines((await legacyLogLines(fsl, dir)).lines);
    expect(folded.feed.map(({ streamId, type, position }) => [streamId, type, position])).toEqual([
      ['a', '$deleted', 3],
      ['b', 'T', 4],
    ]);
    expect(folded.blobs).toEqual({ b: [sha] });
    expect(readFileSync(join(dir, 'streams', 'a.jsonl'), 'utf8')).toContain('"stream":"a"');
  });
});
