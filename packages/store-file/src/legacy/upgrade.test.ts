import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeFileSystem } from '../fs-layer.js';
import { copyOfFixture, expectCleanFormat4, FIXTURES, fixturePath } from './fold.fixture.js';
import { legacyLogLines } from './legacy-log.js';
import { FIRST_SEGMENT, removeLegacyLeftovers, upgradeLegacyStore } from './upgrade.js';

const fsl = nodeFileSystem;
describe('upgradeLegacyStore', () => {
  for (const name of FIXTURES) {
    it(`${name}: leaves only the new layout, its segment holding exactly legacyLogLines' lines`, async () => {
      const dir = copyOfFixture(name);
      const { lines } = await legacyLogLines(fsl, dir);
      await upgradeLegacyStore(fsl, dir);
      await expectCleanFormat4(dir, lines, fixturePath(name));
      for (const blob of readdirSync(join(fixturePath(name), 'blobs'))) {
        expect(readFileSync(join(dir, 'blobs', blob))).toEqual(readFileSync(join(fixturePath(name), 'blobs', blob)));
      }
      if (process.platform !== 'win32') {
        expect(statSync(join(dir, 'log')).mode & 0o777).toBe(0o700);
        expect(statSync(join(dir, 'log', FIRST_SEGMENT)).mode & 0o777).toBe(0o600);
      }
      // Once upgraded, again is a no-op, and a legacy reader refuses the store.
      await upgradeLegacyStore(fsl, dir);
      await expectCleanFormat4(dir, lines, fixturePath(name));
      await expect(legacyLogLines(fsl, dir)).rejects.toMatchObject({ code: 'unsupported_format', version: 4 });
    });
  }

  it('replaces what an earlier attempt left (log.upgrade/, a stale log/) while format.json still says 3', async () => {
    const dir = copyOfFixture('format-3');
    const { lines } = await legacyLogLines(fsl, dir);
    for (const stale of ['log', 'log.upgrade']) {
      mkdirSync(join(dir, stale, 'nested'), { recursive: true });
      writeFileSync(join(dir, stale, FIRST_SEGMENT), 'half a line');
    }
    await upgradeLegacyStore(fsl, dir);
    await expectCleanFormat4(dir, lines, fixturePath('format-3'));
  });

  it('removeLegacyLeftovers leaves a store that still says format 3 alone, and finishes a removal cut short at format 4', async () => {
    const dir = copyOfFixture('format-3');
    const { lines } = await legacyLogLines(fsl, dir);
    await removeLegacyLeftovers(fsl, dir);
    expect((await legacyLogLines(fsl, dir)).lines).toEqual(lines);
    await upgradeLegacyStore(fsl, dir);
    for (const name of ['streams', 'owners', 'blanks/alternate']) mkdirSync(join(dir, name), { recursive: true });
    writeFileSync(join(dir, 'streams', 'x.jsonl'), '');
    writeFileSync(join(dir, 'manifest.json'), '');
    writeFileSync(join(dir, '.manifest.json.1234.ab12.tmp'), '');
    await removeLegacyLeftovers(fsl, dir);
    await expectCleanFormat4(dir, lines, fixturePath('format-3'));
  });
});
