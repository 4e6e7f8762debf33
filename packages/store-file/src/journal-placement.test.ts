import { appendFileSync, copyFileSync, cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CorruptionError, type StreamId } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { eventPayload, frameLine } from './journal-codec.js';
import { collect, freshDir, openFailure, randomStream, withoutCleanClose } from './test-support.fixture.js';

const journalOf = (dir: string, stream: StreamId) => join(dir, 'streams', `${stream}.jsonl`);
const lineOf = (path: string, n: number) => `${readFileSync(path, 'utf8').split('\n')[n - 1]}\n`;

/** Opening as a writer and as a read-only view both fail with CorruptionError naming `file` and `line`. */
async function expectRefused(directory: string, file: string, line: number, reason: RegExp): Promise<void> {
  // Opened as after a crash: after a clean close, open takes the files as the manifest records them.
  withoutCleanClose(directory);
  for (const readOnly of [false, true]) {
    const error = await openFailure({ directory, readOnly });
    expect(error, readOnly ? 'read-only view' : 'writer').toBeInstanceOf(CorruptionError);
    expect(error).toMatchObject({ code: 'corruption', file, line });
    expect(String(error)).toMatch(reason);
  }
}

async function twoStreams(directory: string): Promise<[StreamId, StreamId]> {
  const [a, b] = [randomStream('a'), randomStream('b')];
  const store = await fileStore({ directory });
  await store.append(
    a,
    [
      { type: 'A', data: 1 },
      { type: 'A', data: 2 },
    ],
    { expectedRevision: 'no_stream' },
  );
  await store.append(
    b,
    [1, 2, 3].map((n) => ({ type: 'B', data: n })),
    { expectedRevision: 'no_stream' },
  );
  await store.close();
  return [a, b];
}

describe('a journal line or journal that is not where its writer put it is corruption', () => {
  it("another stream's line appended to a journal", async () => {
    const dir = freshDir();
    const [a, b] = await twoStreams(dir);
    appendFileSync(journalOf(dir, a), lineOf(journalOf(dir, b), 3));
    await expectRefused(dir, journalOf(dir, a), 3, new RegExp(`names stream ${b}`));
  });

  it("a journal copied to another stream's name", async () => {
    const dir = freshDir();
    const [a] = await twoStreams(dir);
    const c = randomStream('c');
    copyFileSync(journalOf(dir, a), journalOf(dir, c));
    await expectRefused(dir, journalOf(dir, c), 1, new RegExp(`names stream ${a}`));
  });

  it("a line at a position another stream's line holds", async () => {
    const dir = freshDir();
    const [a] = await twoStreams(dir);
    // Named right, next revision, rising position, but position 4 is the second line of b.
    appendFileSync(journalOf(dir, a), frameLine(eventPayload(a, 3, 4, '2026-01-01T00:00:00.000Z', 'A', undefined, false, '3')));
    withoutCleanClose(dir);
    for (const readOnly of [false, true]) {
      const error = await fileStore({ directory: dir, readOnly }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CorruptionError);
      expect(String(error)).toMatch(/position 4 is also used elsewhere/);
    }
  });

  it('a line appended to a journal after open is refused when read', async () => {
    const dir = freshDir();
    const [a, b] = await twoStreams(dir);
    const store = await fileStore({ directory: dir, readOnly: true });
    // The view reads up to the length it saw at open; a writer-less change past it is not read at all, so damage
    // a line the view knows instead: rewrite a's second line with b's (same length, same revision).
    const aLines = readFileSync(journalOf(dir, a), 'utf8');
    const bLine = lineOf(journalOf(dir, b), 3);
    expect(bLine.length).toBe(lineOf(journalOf(dir, a), 2).length);
    writeFileSync(journalOf(dir, a), aLines.slice(0, aLines.indexOf('\n') + 1) + bLine);
    await expect(collect((await store.read(a)).events)).rejects.toMatchObject({ code: 'corruption', file: journalOf(dir, a), line: 2 });
    await store.close();
  });
});

describe('journals written by release 0.1.0 (without the stream in each line)', () => {
  const fixture = fileURLToPath(new URL('./fixtures/release-0.1.0', import.meta.url));
  const copy = () => {
    const dir = join(freshDir(), 'store');
    cpSync(fixture, dir, { recursive: true });
    return dir;
  };

  it("another stream's line appended to a journal repeats a position", async () => {
    const dir = copy();
    appendFileSync(journalOf(dir, 'catalog'), lineOf(journalOf(dir, 'ledger-1'), 2));
    const error = await fileStore({ directory: dir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptionError);
    expect(String(error)).toMatch(/position 26 is also used elsewhere/);
    expect([journalOf(dir, 'catalog'), journalOf(dir, 'ledger-1')]).toContain((error as CorruptionError).file);
  });

  it("a journal copied to another stream's name repeats its positions", async () => {
    const dir = copy();
    copyFileSync(journalOf(dir, 'ledger-1'), journalOf(dir, 'ledger-2'));
    for (const readOnly of [false, true]) {
      const error = await fileStore({ directory: dir, readOnly }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CorruptionError);
      expect(String(error)).toMatch(/position 25 is also used elsewhere/);
      expect((error as CorruptionError).line).toBe(1);
    }
  });

  it('a line without the stream after lines that carry it', async () => {
    const dir = copy();
    const store = await fileStore({ directory: dir });
    await store.append('catalog-2', [{ type: 'Noted', data: null }], { expectedRevision: 'no_stream' });
    await store.close();
    // A 0.1.0 line (no stream) with the next revision and a fresh position, after a line that names its stream.
    appendFileSync(journalOf(dir, 'catalog-2'), frameLine('{"revision":2,"position":99,"recordedAt":"2026-11-30T10:00:44.000Z","type":"Noted","data":null}'));
    await expectRefused(dir, journalOf(dir, 'catalog-2'), 2, /does not name its stream/);
  });
});
