import { CommanderError } from 'commander';
import { describeFailure, ExitCode } from './exit-codes.js';
import { Output } from './output.js';
import { buildProgram } from './program.js';

/**
 * Runs the `sessionfold` command line and resolves to its exit code (never rejects): 0 ok, 1 problems or
 * refused, 2 usage, 3 not found, 4 storage error.
 */
export async function main(argv: readonly string[]): Promise<number> {
  // A reader that stops early (`| head`) closes the pipe: that ends the output, and is not a failure.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(ExitCode.ok);
    throw error;
  });
  try {
    const program = await buildProgram(argv.slice(2));
    await program.parseAsync([...argv]);
    return typeof process.exitCode === 'number' ? process.exitCode : ExitCode.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version end in a CommanderError too; commander has already printed what it had to say.
      if (error.exitCode === 0 || error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return ExitCode.ok;
      if (argv.includes('--json')) {
        const message = error.message.replace(/^error: /, '');
        await new Output({ json: true, quiet: true }).line({
          ok: false,
          error: { exitCode: ExitCode.usage, code: 'usage', message, hint: 'Try: sessionfold --help' },
        });
      }
      return ExitCode.usage;
    }
    const out = new Output({ json: argv.includes('--json'), quiet: false });
    const failure = describeFailure(error);
    out.error(failure.message);
    if (failure.hint) out.note(failure.hint);
    if (out.json) await out.line({ ok: false, error: failure });
    return failure.exitCode;
  }
}
