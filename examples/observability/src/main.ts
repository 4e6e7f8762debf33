import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runObservability } from './observability.js';

const directory = join(fileURLToPath(new URL('..', import.meta.url)), 'observability-data');
// Each run starts afresh: the last step damages a journal on purpose.
rmSync(directory, { recursive: true, force: true });
const result = await runObservability(directory);
console.log(`\nmetrics after ${result.transcriptLines} concurrent transcript lines, a command, a compaction and a damaged read:`);
for (const [name, reading] of result.readings) {
  const value =
    reading.kind === 'counter'
      ? `${reading.sum}`
      : `n=${reading.count} mean=${(reading.sum / Math.max(1, reading.count)).toFixed(2)} max=${reading.max.toFixed(2)}`;
  console.log(`  ${name.padEnd(42)} ${value} ${reading.unit}`);
}
console.log(result.damageRefused ? '\nthe damaged journal was refused with CorruptionError, as it must be' : '\nthe damaged journal was NOT refused');
process.exitCode = result.damageRefused ? 0 : 1;
