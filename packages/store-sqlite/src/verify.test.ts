import { readFileSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { sqliteStore } from './index.js';
import { freshPath } from './test-support.fixture.js';

async function populated(): Promise<string> {
  const path = freshPath();
  const store = await sqliteStore({ path });
  for (let n = 0; n < 300; n++)
    await store.append(`s-${String(n).padStart(4, '0')}`, [{ type: 'Noted', data: { pad: 'x'.repeat(100) } }], { expectedRevision: 'no_stream' });
  await store.putBlob('s-0000', new Uint8Array([1, 2, 3]));
  await store.close();
  return path;
}

/** Changes rows behind the store's back, through a plain connection: what a bug or a hand edit would do. */
function edit(path: string, sql: string): void {
  const raw = new Database(path);
  raw.exec(sql);
  raw.close();
}

describe('verify', () => {
  it('a clean file has no problems, and verify writes nothing', async () => {
    const path = await populated();
    const before = readFileSync(path);
    const store = await sqliteStore({ path });
    const report = await store.verify!();
    await store.close();
    expect(report).toMatchObject({ ok: true, problems: [], checked: { streams: 300, records: 300, blobs: 1 } });
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  it('a damaged page is reported by the integrity check, naming the file', async () => {
    const path = await populated();
    const raw = new Database(path, { readonly: true });
    const pageSize = Number(raw.pragma('page_size', { simple: true }));
    const leaves = raw.prepare("SELECT pageno FROM dbstat WHERE name = 'events_by_revision' AND pagetype = 'leaf' ORDER BY path").pluck().all() as number[];
    raw.close();
    const bytes = readFileSync(path);
    const offset = ((leaves[0] as number) - 1) * pageSize;
    bytes.fill(0xee, offset, offset + 12);
    writeFileSync(path, bytes);
    const store = await sqliteStore({ path });
    const report = await store.verify!();
    await store.close();
    expect(report.ok).toBe(false);
    expect(report.problems.some((p) => p.severity === 'error' && p.code === 'integrity_check' && p.file === path)).toBe(true);
  });

  it('a revision gap, a misplaced position, a bad snapshot, a changed blob and a stream without its row are each named by table and key', async () => {
    const path = await populated();
    const store = await sqliteStore({ path });
    await store.append(
      's-0001',
      [
        { type: 'More', data: 1 },
        { type: 'More', data: 2 },
      ],
      { expectedRevision: 1 },
    );
    await store.append('s-0002', [{ type: 'More', data: 1 }], { expectedRevision: 1 });
    await store.append('s-0003', [{ type: 'More', data: 1 }], { expectedRevision: 1 });
    await store.compact('s-0004', { revision: 1, state: {}, identity: { stream: 's-0004', schemaVersion: 1 } });
    await store.close();
    edit(
      path,
      `DELETE FROM events WHERE stream = 's-0001' AND revision = 2 AND kind = 0;
       UPDATE events SET position = 1000000 WHERE stream = 's-0002' AND revision = 1 AND kind = 0;
       UPDATE events SET data = '{"revision":1,"state":{},"identity":{"stream":"s-9999","schemaVersion":1}}' WHERE stream = 's-0004' AND kind = 1;
       UPDATE blobs SET bytes = x'010204';
       DELETE FROM streams WHERE stream = 's-0005';`,
    );
    const reopened = await sqliteStore({ path });
    const report = await reopened.verify!();
    await reopened.close();
    const found = report.problems.map((p) => `${p.severity} ${p.code} ${p.table} ${p.key}`);
    expect(found).toEqual(
      expect.arrayContaining([
        'error revision_gap events s-0001',
        'error position_order events s-0002',
        'error damaged_snapshot events s-0004',
        expect.stringMatching(/^error blob_hash blobs [0-9a-f]{64}$/),
        'error index_mismatch streams s-0005',
      ]),
    );
    expect(found).toHaveLength(5);
  });
});
