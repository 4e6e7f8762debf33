import { describe, expect, it } from 'vitest';
import type { VerifyProblem } from '@sessionfold/core/kernel';
import { adminPool, openStore, schemasDroppedAfterAll } from './test-support.fixture.js';

const any = { expectedRevision: 'any' } as const;
const brief = (problems: VerifyProblem[]) => problems.map(({ severity, code, table, key }) => ({ severity, code, table, key }));

describe('postgresStore: verify', { tags: ['postgres'] }, () => {
  const fresh = schemasDroppedAfterAll();
  /** A store with three streams, a snapshot and a blob, damaged by `damage` (raw SQL on its schema); returns the report. */
  const damaged = async (label: string, damage: (S: string) => string) => {
    const { store, schema } = await openStore({ schema: fresh(label) });
    try {
      await store.append(
        'a',
        [1, 2, 3].map((n) => ({ type: 'A', data: n })),
        any,
      );
      await store.append('b', [{ type: 'B', data: 1 }], any);
      await store.append(
        'c',
        [1, 2].map((n) => ({ type: 'C', data: n })),
        any,
      );
      await store.compact('c', { revision: 1, state: 'one', identity: { stream: 'c', schemaVersion: 1 } });
      await store.putBlob('b', new Uint8Array([1, 2, 3]));
      expect((await store.verify()).problems).toEqual([]);
      await adminPool().query(damage(`"${schema}"`));
      return { report: await store.verify(), schema };
    } finally {
      await store.close();
    }
  };

  it('names a missing revision by the events table and the stream', async () => {
    const { report, schema } = await damaged('gap', (S) => `DELETE FROM ${S}.events WHERE stream = 'a' AND revision = 2`);
    expect(report.ok).toBe(false);
    expect(brief(report.problems)).toEqual([{ severity: 'error', code: 'revision_gap', table: `${schema}.events`, key: 'a' }]);
  });

  it('names a stream row that disagrees with its events', async () => {
    const { report, schema } = await damaged('head', (S) => `UPDATE ${S}.streams SET revision = 7 WHERE stream = 'b'`);
    expect(brief(report.problems)).toEqual([{ severity: 'error', code: 'revision_gap', table: `${schema}.streams`, key: 'b' }]);
  });

  it('names positions out of revision order', async () => {
    const { report, schema } = await damaged(
      'order',
      (S) => `UPDATE ${S}.events SET position = 100 WHERE stream = 'a' AND revision = 1;
              UPDATE ${S}.events SET position = 1 WHERE stream = 'a' AND revision = 2;
              UPDATE ${S}.events SET position = 2 WHERE position = 100`,
    );
    expect(brief(report.problems)).toEqual([{ severity: 'error', code: 'position_order', table: `${schema}.events`, key: 'a@2' }]);
  });

  it('names a position used twice once the primary key no longer stops it', async () => {
    const { report, schema } = await damaged(
      'twice',
      (S) => `ALTER TABLE ${S}.events DROP CONSTRAINT events_pkey;
              INSERT INTO ${S}.events SELECT * FROM ${S}.events WHERE kind = 1`,
    );
    expect(report.ok).toBe(false);
    expect(brief(report.problems)).toContainEqual({
      severity: 'error',
      code: 'duplicate_position',
      table: `${schema}.events`,
      key: expect.stringMatching(/^\d+$/),
    });
  });

  it('names a snapshot record of another stream or revision', async () => {
    const { report, schema } = await damaged(
      'snap',
      (S) => `UPDATE ${S}.events SET data = '{"revision":1,"state":"one","identity":{"stream":"x","schemaVersion":1}}' WHERE kind = 1`,
    );
    expect(brief(report.problems)).toEqual([{ severity: 'error', code: 'damaged_snapshot', table: `${schema}.events`, key: 'c' }]);
  });

  it('names blob bytes that do not match their sha256, and an owner whose bytes are gone', async () => {
    const changed = await damaged('blob', (S) => `UPDATE ${S}.blobs SET bytes = '\\x0102'`);
    expect(brief(changed.report.problems)).toEqual([
      { severity: 'error', code: 'blob_hash', table: `${changed.schema}.blobs`, key: expect.stringMatching(/^[0-9a-f]{64}$/) },
    ]);
    const gone = await damaged('owner', (S) => `DELETE FROM ${S}.blobs`);
    expect(brief(gone.report.problems)).toEqual([
      { severity: 'error', code: 'blob_missing', table: `${gone.schema}.blob_owners`, key: expect.stringMatching(/^b\/[0-9a-f]{64}$/) },
    ]);
  });

  it('warns of bytes no stream owns, and stays ok', async () => {
    const { report, schema } = await damaged('orphan', (S) => `DELETE FROM ${S}.blob_owners`);
    expect(report.ok).toBe(true);
    expect(brief(report.problems)).toEqual([{ severity: 'warning', code: 'blob_orphan', table: `${schema}.blobs`, key: expect.any(String) }]);
  });

  it('names a feed counter behind the last position', async () => {
    const { report, schema } = await damaged('counter', (S) => `UPDATE ${S}.feed_head SET position = 2`);
    expect(brief(report.problems)).toEqual([{ severity: 'error', code: 'index_mismatch', table: `${schema}.feed_head`, key: 'only_row' }]);
  });

  it('counts what it checked, and rejects with the reason of a signal fired before it starts', async () => {
    const { store } = await openStore({ schema: fresh('counts') });
    try {
      await store.append('a', [{ type: 'A', data: 1 }], any);
      const verify = store.verify.bind(store);
      expect(await verify()).toMatchObject({ ok: true, checked: { streams: 1, records: 1, snapshots: 0, blobs: 0 } });
      const reason = new Error('stop');
      await expect(verify({ signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
      await expect(verify({ signal: 'soon' as unknown as AbortSignal })).rejects.toMatchObject({ code: 'invalid_input', field: 'signal' });
    } finally {
      await store.close();
    }
  });
});
