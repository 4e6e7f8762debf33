import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';

// One long-lived python3 answers every request, so a property test costs a pipe round trip per case.
// A JS number maps to a Python int when it is a safe integer other than -0 and to a float otherwise, as the
// writer documents; JSON.stringify writes -0 as 0, so -0 travels as a marker string.
const NEGATIVE_ZERO = '\u0000negative zero\u0000';
const WORKER = `
import json, sys
LIMIT = 2 ** 53 - 1
NEGATIVE_ZERO = '\\u0000negative zero\\u0000'
def as_js(v):
    if v == NEGATIVE_ZERO: return -0.0
    if isinstance(v, bool): return v
    if isinstance(v, int): return v if -LIMIT <= v <= LIMIT else float(v)
    if isinstance(v, list): return [as_js(x) for x in v]
    if isinstance(v, dict): return {k: as_js(x) for k, x in v.items()}
    return v
for line in sys.stdin.buffer:
    try:
        out = json.dumps(as_js(json.loads(line.decode('utf-8'))), indent=2)
        sys.stdout.write(json.dumps({'ok': out}) + '\\n')
    except Exception as e:
        sys.stdout.write(json.dumps({'error': repr(e)}) + '\\n')
    sys.stdout.flush()
`;

/** A python3 process that answers `json.dumps(value, indent=2)` for each value sent to it. */
export interface PythonDumps {
  /** Python's bytes for `value` (sent as `JSON.stringify(value)`). */
  dumps(value: unknown): Promise<string>;
  close(): Promise<void>;
}

/** Starts the python3 worker; close it in `afterAll`. */
export function startPythonDumps(): PythonDumps {
  const child: ChildProcessWithoutNullStreams = spawn('python3', ['-c', WORKER], { stdio: 'pipe' });
  const waiting: ((line: string) => void)[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  createInterface({ input: child.stdout }).on('line', (line) => waiting.shift()?.(line));
  return {
    dumps(value) {
      return new Promise((resolve, reject) => {
        waiting.push((line) => {
          const answer = JSON.parse(line) as { ok?: string; error?: string };
          if (answer.ok !== undefined) resolve(answer.ok);
          else reject(new Error(`python3: ${answer.error ?? 'no answer'} ${stderr}`));
        });
        child.stdin.write(`${JSON.stringify(value, (_key, item: unknown) => (Object.is(item, -0) ? NEGATIVE_ZERO : item))}\n`);
      });
    },
    async close() {
      child.stdin.end();
      await exited;
    },
  };
}
