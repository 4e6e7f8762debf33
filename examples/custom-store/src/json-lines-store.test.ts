import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CorruptionError, type EventStore, type RecordedEvent } from '@sessionfold/core/kernel';
import { jsonLinesStore } from './json-lines-store.js';

async function all(events: AsyncIterable<RecordedEvent>): Promise<string[]> {
  const types: string[] = [];
  for await (const event of events) types.push(event.type);
  return types;
}

describe('the json-lines file', () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));
  const freshFile = () => {
    const dir = mkdtempSync(join(tmpdir(), 'sessionfold-json-lines-'));
    dirs.push(dir);
    return join(dir, 'store.jsonl');
  };
  const filled = async (file: string): Promise<EventStore> => {
    const store = jsonLinesStore({ file });
    await store.append('order-1', [{ type: 'Placed', data: { total: 3 } }], { expectedRevision: 'no_stream' });
    await store.append('order-1', [{ type: 'Paid', data: {} }], { expectedRevision: 1 });
    return store;
  };

  it('holds one checksummed line per change', async () => {
    const file = freshFile();
    await (await filled(file)).close();
    const lines = readFileSync(file, 'utf8').split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^[0-9a-f]{64} \{"kind":"append","stream":"order-1",/);
    expect(lines[2]).toBe('');
  });

  it('a torn last line is dropped on open and the journal stays usable', async () => {
    const file = freshFile();
    await (await filled(file)).close();
    appendFileSync(file, '0123 {"kind":"app');
    const store = jsonLinesStore({ file });
    const read = await store.read('order-1');
    expect(read.revision).toBe(2);
    await store.append('order-1', [{ type: 'Shipped', data: {} }], { expectedRevision: 2 });
    await store.close();
    const reopened = jsonLinesStore({ file });
    expect(await all((await reopened.read('order-1')).events)).toEqual(['Placed', 'Paid', 'Shipped']);
    await reopened.close();
  });

  it('a damaged complete line is a CorruptionError naming the file and line', async () => {
    const file = freshFile();
    await (await filled(file)).close();
    writeFileSync(file, readFileSync(file, 'utf8').replace('"total":3', '"total":4'));
    expect(() => jsonLinesStore({ file })).toThrow(CorruptionError);
    expect(() => jsonLinesStore({ file })).toThrow(`${file}:1: checksum mismatch`);
  });
});
