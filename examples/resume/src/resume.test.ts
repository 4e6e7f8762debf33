import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSnapshot } from '@sessionfold/sessionfile';

const MAIN = join(import.meta.dirname, 'main.ts');

/** The example as `npm start` runs it, in one process (no tsx wrapper), so a SIGKILL hits the run itself. */
function start(args: string[]): { child: ChildProcess; lines: string[]; exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> } {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=sessionfold-source', MAIN, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: string[] = [];
  let rest = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop() ?? '';
    lines.push(...parts);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  return { child, lines, exited };
}

async function runToEnd(args: string[]): Promise<{ code: number | null; lines: string[] }> {
  const { lines, exited } = start(args);
  const { code } = await exited;
  return { code, lines };
}

describe('resuming a run from its session file', () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));
  const freshDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'sessionfold-resume-'));
    dirs.push(dir);
    return dir;
  };

  it('a run killed with SIGKILL resumes after its last saved step and ends exactly where an uninterrupted run ends', async () => {
    const dir = freshDir();
    const whole = join(dir, 'whole.json');
    const killed = join(dir, 'killed.json');

    const uninterrupted = await runToEnd(['--file', whole, '--steps', '12', '--step-ms', '0']);
    expect(uninterrupted.code).toBe(0);
    expect(uninterrupted.lines.at(-1)).toMatch(/^done: 12 steps, total 650, digest [0-9a-f]{16}$/);

    const first = start(['--file', killed, '--steps', '12', '--step-ms', '150']);
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        if (!first.lines.some((line) => line.startsWith('step 4/12:'))) return;
        clearInterval(timer);
        first.child.kill('SIGKILL');
        resolve();
      }, 5);
    });
    expect((await first.exited).signal).toBe('SIGKILL');
    expect(first.lines.at(-1)).not.toMatch(/^done/);
    const saved = await loadSnapshot(killed);
    const reached = saved?.loop.turn_count ?? 0;
    expect(reached).toBeGreaterThanOrEqual(4);
    expect(reached).toBeLessThan(12);

    const second = await runToEnd(['--file', killed, '--steps', '12', '--step-ms', '0']);
    expect(second.code).toBe(0);
    expect(second.lines[0]).toBe(`resuming ${killed} after step ${reached} of 12`);
    expect(second.lines[1]).toMatch(new RegExp(`^step ${reached + 1}/12: `));
    expect(second.lines).toHaveLength(12 - reached + 2);
    // The steps before the kill and after the restart add up to the uninterrupted run, and so does the file, byte
    // for byte. (A kill between a save and its line leaves a step saved but not printed: the restart skips it too.)
    expect(uninterrupted.lines.slice(1, first.lines.length)).toEqual(first.lines.slice(1));
    expect(second.lines.slice(1)).toEqual(uninterrupted.lines.slice(1 + reached));
    expect(readFileSync(killed, 'utf8')).toBe(readFileSync(whole, 'utf8'));
  });

  it('a file of another run is refused with the identity message naming both ways out, and both ways work', async () => {
    const dir = freshDir();
    const file = join(dir, 'session.json');
    expect((await runToEnd(['--file', file, '--topic', 'Ship the release', '--steps', '2', '--step-ms', '0'])).code).toBe(0);
    const before = readFileSync(file, 'utf8');

    const refused = await runToEnd(['--file', file, '--topic', 'Plan the launch', '--steps', '2', '--step-ms', '0']);
    expect(refused.code).toBe(2);
    expect(refused.lines).toEqual([
      `refused ${file}: Session file belongs to a different session: topic is "Ship the release" in the file but "Plan the launch" for this run. ` +
        'Delete it to start fresh, or pass a different session file path.',
    ]);
    expect(readFileSync(file, 'utf8')).toBe(before);

    // Way out one: a different path starts a new run beside the old file.
    const other = join(dir, 'launch.json');
    const elsewhere = await runToEnd(['--file', other, '--topic', 'Plan the launch', '--steps', '2', '--step-ms', '0']);
    expect(elsewhere.lines[0]).toBe(`new run "Plan the launch": 2 steps, saved to ${other}`);
    expect(readFileSync(file, 'utf8')).toBe(before);

    // Way out two: delete the file and the run starts fresh at the same path.
    rmSync(file);
    const fresh = await runToEnd(['--file', file, '--topic', 'Plan the launch', '--steps', '2', '--step-ms', '0']);
    expect(fresh.code).toBe(0);
    expect(fresh.lines[0]).toBe(`new run "Plan the launch": 2 steps, saved to ${file}`);
    expect((await loadSnapshot(file))?.identity.topic).toBe('Plan the launch');
  });

  it('the lines the README shows are what a run prints', async () => {
    const file = join(freshDir(), 'session.json');
    const whole = await runToEnd(['--file', file, '--step-ms', '0']);
    const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8');
    const shown = readme.split('\n').filter((line) => /^(step \d|done:)/.test(line));
    expect(shown.length).toBeGreaterThan(5);
    for (const line of shown) expect(whole.lines).toContain(line);
    expect(readme).toContain(`new run "Ship the release": 20 steps, saved to …/resume-data/session.json`);

    const refused = await runToEnd(['--file', file, '--topic', 'Plan the launch']);
    expect(readme).toContain(refused.lines[0]?.replace(file, '…/resume-data/session.json'));
  });
});
