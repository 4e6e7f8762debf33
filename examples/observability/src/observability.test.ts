import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fanOut } from './fan-out.js';
import { streamKind } from './metrics-observers.js';
import { runObservability } from './observability.js';

describe('observing a store and the service', () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  it('counts what was made durable, how it was synced, the compaction and the damage, and logs what deserves a line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sessionfold-observability-'));
    dirs.push(dir);
    const lines: string[] = [];
    const result = await runObservability(dir, { info: (line) => lines.push(line), warn: (line) => lines.push(line) });
    const read = (name: string) => result.readings.get(name);

    expect(result.damageRefused).toBe(true);
    // Every transcript line, the start, the enqueue, the claim and the completion are events; more (the start key) may come.
    expect(read('sessionfold.store.events')?.sum).toBeGreaterThanOrEqual(result.transcriptLines + 4);
    expect(read('sessionfold.store.bytes')?.sum).toBeGreaterThan(read('sessionfold.store.events')?.sum ?? 0);
    // Concurrent calls share appends and appends share syncs: fewer syncs than lines.
    const syncs = read('sessionfold.store.sync.duration')?.count ?? 0;
    expect(syncs).toBeGreaterThan(0);
    expect(syncs).toBeLessThan(result.transcriptLines);
    expect(read('sessionfold.service.calls_per_append')?.max).toBeGreaterThan(1);
    expect(read('sessionfold.compactions')?.sum).toBeGreaterThanOrEqual(1);
    expect(read('sessionfold.compaction.dropped_events')?.sum).toBeGreaterThan(0);
    expect(read('sessionfold.store.corruptions')?.sum).toBe(1);
    expect(lines.some((line) => line.startsWith('sessionfold: compacted session-'))).toBe(true);
    expect(lines.some((line) => line.startsWith('sessionfold: damage found:'))).toBe(true);
  });

  it('fans one hook out to every observer that has it', () => {
    const seen: string[] = [];
    const both = fanOut<{ hook?: (value: number) => void; other?: () => void }>(
      { hook: (value) => seen.push(`a${value}`) },
      { hook: (value) => seen.push(`b${value}`), other: () => seen.push('other') },
    );
    both.hook?.(1);
    expect(seen).toEqual(['a1', 'b1']);
    expect(streamKind('session-0a1b')).toBe('session');
    expect(streamKind('catalog')).toBe('catalog');
  });
});
