import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeFileSystem } from '../fs-layer.js';
import { readStoreFormat } from '../store-format.js';
import { ChildOutput, random, startChild } from '../test-support.fixture.js';
import { contents, copyOfFixture, expectCleanFormat4, fixturePath } from './fold.fixture.js';
import { legacyLogLines } from './legacy-log.js';
import { FIRST_SEGMENT, removeLegacyLeftovers, upgradeLegacyStore } from './upgrade.js';

const fsl = nodeFileSystem;
const KILL_AFTER = 'SESSIONFOLD_KILL_AFTER_STEP';
const fixture = fixturePath('format-3');

/** A child upgrading a fresh copy of the format-3 fixture, killing itself after step `killAfter` (0: never). */
async function upgrader(killAfter: number): Promise<{ dir: string; child: ChildOutput }> {
  const dir = copyOfFixture('format-3');
  // The child inherits the environment as it is when it is spawned.
  if (killAfter > 0) process.env[KILL_AFTER] = String(killAfter);
  try {
    const child = new ChildOutput(startChild('upgrader', [dir]));
    await child.waitFor((line) => line === 'ready');
    return { dir, child };
  } finally {
    delete process.env[KILL_AFTER];
  }
}

/**
 * Checks that `dir` holds one whole layout: format ≤ 3 with every old file as it was, or format 4 whose log holds
 * exactly the original's lines; then that upgrading again (or finishing the removal) leaves a clean format-4 store.
 */
async function expectOneWholeLayout(dir: string, original: { lines: string[]; files: Record<string, string> }): Promise<'old' | 'new'> {
  let found: 'old' | 'new';
  if ((await readStoreFormat(fsl, join(dir, 'format.json'))) <= 3) {
    found = 'old';
    expect(contents(dir, ['log', 'log.upgrade'])).toEqual(original.files);
    expect((await legacyLogLines(fsl, dir)).lines).toEqual(original.lines);
    await upgradeLegacyStore(fsl, dir);
  } else {
    found = 'new';
    expect(readdirSync(join(dir, 'log'))).toEqual([FIRST_SEGMENT]);
    expect(readFileSync(join(dir, 'log', FIRST_SEGMENT), 'utf8')).toBe(original.lines.join(''));
    await removeLegacyLeftovers(fsl, dir);
  }
  await expectCleanFormat4(dir, original.lines, fixture);
  return found;
}

/** Runs `task` for each of `items`, `width` at a time. */
async function inParallel<T>(items: readonly T[], width: number, task: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: width }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await task(item);
    }),
  );
}

describe('an upgrade killed at any point leaves one whole layout', () => {
  it('killed right after each file-system step, then after random delays', async () => {
    const original = { lines: (await legacyLogLines(fsl, fixture)).lines, files: contents(fixture) };
    // A run to the end says how many steps an upgrade takes.
    const whole = await upgrader(0);
    whole.child.child.stdin?.write('go\n');
    const steps = Number((await whole.child.waitFor((line) => line.startsWith('done '))).slice(5));
    await whole.child.exited;
    expect(steps).toBeGreaterThan(10);
    await expectCleanFormat4(whole.dir, original.lines, fixture);

    const seen = new Set<string>();
    await inParallel(
      Array.from({ length: steps }, (_, i) => i + 1),
      6,
      async (step) => {
        const { dir, child } = await upgrader(step);
        child.child.stdin?.write('go\n');
        const exit = await child.exited;
        expect(exit.signal, `step ${step}: ${child.stderr}`).toBe('SIGKILL');
        seen.add(await expectOneWholeLayout(dir, original));
      },
    );
    // Kills before the switch find the old layout, kills after it the new one.
    expect([...seen].sort()).toEqual(['new', 'old']);

    const seed = Date.now() % 1_000_000;
    const next = random(seed);
    const delays = Array.from({ length: 30 }, () => Math.floor(next() * 31));
    await inParallel(delays, 4, async (delay) => {
      const { dir, child } = await upgrader(0);
      child.child.stdin?.write('go\n');
      await new Promise((resolve) => setTimeout(resolve, delay));
      await child.kill();
      await expect(expectOneWholeLayout(dir, original), `seed ${seed}, delay ${delay}`).resolves.toBeDefined();
    });
  });
});
