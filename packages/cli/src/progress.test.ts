import { execFile, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, freshDir, populatedFileStore, run } from './test-support.fixture.js';

/** util-linux `script` gives the command a terminal, the one place a progress bar is drawn. */
const hasScript = (() => {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
if (!hasScript) console.info('cli: the test of the progress bar on a terminal is skipped: util-linux `script` is not installed');

function onTerminal(args: readonly string[]): Promise<string> {
  const command = [process.execPath, BIN, ...args].map((part) => `'${part.replace(/'/g, `'\\''`)}'`).join(' ');
  return new Promise((resolve, reject) => {
    execFile('script', ['-qec', command, '/dev/null'], (error, stdout) => (error ? reject(error) : resolve(stdout)));
  });
}

describe('the progress bar', () => {
  it('is never drawn when stderr is not a terminal', async () => {
    const store = await populatedFileStore();
    const result = await run(['copy', store.url, `file:${join(freshDir(), 'copy')}`]);
    expect(result.code).toBe(0);
    expect(result.stderr).not.toMatch(/ETA/);
  });

  it.skipIf(!hasScript)('shows items done, rate and ETA on a terminal, and nothing with --quiet or --json', async () => {
    const store = await populatedFileStore();
    const drawn = await onTerminal(['copy', store.url, `file:${join(freshDir(), 'a')}`]);
    expect(drawn).toMatch(/copy \[.*\] \d+\/\d+ \| \d+\/s \| ETA/);
    expect(await onTerminal(['copy', '--quiet', store.url, `file:${join(freshDir(), 'b')}`])).not.toMatch(/ETA/);
    expect(await onTerminal(['verify', '--json', '-s', store.url])).not.toMatch(/ETA/);
  });
});
