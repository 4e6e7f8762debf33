import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { SessionFileError } from '@sessionfold/sessionfile';
import { run } from './run.js';

// `npm start -- --topic "…" --steps 20 --step-ms 200 --file resume-data/session.json`: every flag is optional.
const { values } = parseArgs({
  options: {
    file: { type: 'string', default: 'resume-data/session.json' },
    topic: { type: 'string', default: 'Ship the release' },
    steps: { type: 'string', default: '20' },
    'step-ms': { type: 'string', default: '200' },
  },
});
const file = resolve(values.file);
const steps = Number(values.steps);
const stepMs = Number(values['step-ms']);
if (!Number.isSafeInteger(steps) || steps < 1 || !Number.isSafeInteger(stepMs) || stepMs < 0) {
  console.error('--steps must be a whole number from 1, --step-ms a whole number from 0');
  process.exit(64);
}
try {
  await run({ file, topic: values.topic, steps, stepMs });
} catch (error) {
  if (!(error instanceof SessionFileError)) throw error;
  // A file of another run, or one that is not a session file: say which file and the two ways out, change nothing.
  console.log(`refused ${file}: ${error.message}`);
  process.exitCode = 2;
}
