import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runQuickstart } from './quickstart.js';

describe('the quick start', () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  it('takes a session through its life and the journal on disk replays to the identical record', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sessionfold-quickstart-'));
    dirs.push(dir);
    const lines: string[] = [];
    const result = await runQuickstart(dir, (line) => lines.push(line));

    expect(result.identical).toBe(true);
    expect(result.replayed).toEqual(result.live);
    expect(result.live.phase).toBe('ingress_in_progress');
    expect(result.live.ingressFailureCount).toBe(1);
    expect(result.live.state.transcript).toHaveLength(2);
    expect(result.completed).toEqual([result.sessionId]);
    expect(result.kept).toMatchObject({ id: result.sessionId, phase: 'complete' });
    expect(result.kept.state.transcript).toEqual(result.live.state.transcript);
    expect(lines).toHaveLength(9);
    expect(lines[6]).toMatch(/the record is identical/);
    // Completion kept the session's journal, beside the catalog holding its receipt.
    expect(readdirSync(join(dir, 'streams')).filter((name) => name.startsWith('session-'))).toHaveLength(1);
  });

  it('a second run in the same directory adds a session and keeps the first one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sessionfold-quickstart-'));
    dirs.push(dir);
    const first = await runQuickstart(dir, () => {});
    const second = await runQuickstart(dir, () => {});
    expect(second.sessionId).not.toBe(first.sessionId);
    expect(second.completed).toEqual(expect.arrayContaining([first.sessionId, second.sessionId]));
  });
});
