import { resolve } from 'node:path';
import { runMigration } from './migrate.js';

// The stores go to the directory named on the command line, or `migrate-data` here; they stay for a look afterwards.
const directory = resolve(process.argv[2] ?? 'migrate-data');
const result = await runMigration(directory, { postgresUrl: process.env['SESSIONFOLD_PG_URL'] || undefined });
process.exitCode = result.ok ? 0 : 1;
