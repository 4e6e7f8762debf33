import { resolve } from 'node:path';
import { runQuickstart } from './quickstart.js';

// The data directory is named on the command line, or `quickstart-data` here; a rerun adds one more session.
const directory = resolve(process.argv[2] ?? 'quickstart-data');
console.log(`sessionfold quick start: file store in ${directory}\n`);
const result = await runQuickstart(directory);
console.log(`\n${result.identical ? 'Replay matches the live record.' : 'Replay does NOT match the live record.'}`);
process.exitCode = result.identical && result.kept.id === result.sessionId ? 0 : 1;
