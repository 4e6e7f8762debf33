import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import { openSessionHistory } from '@sessionfold/core';
import { z } from 'zod';
import { contextOf, withStore } from '../context.js';
import { examples } from '../help.js';
import { integerText, parseArg } from '../parse.js';

const optionsSchema = z.object({
  port: integerText(0).pipe(z.number().max(65_535)).default(0),
  host: z.string().min(1).default('127.0.0.1'),
  open: z.boolean().default(false),
});

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

/** `inspect`: a read-only web page on the store, served until interrupted; prints the URL with its token. */
export function registerInspect(program: Command): void {
  program
    .command('inspect')
    .description('a read-only web page on the store: sessions, timelines, state at any revision, the live feed, the store; until Ctrl-C')
    .option('--port <port>', 'the port (default 0: a free one)')
    .option('--host <address>', 'the address to bind (default 127.0.0.1); anywhere else, the token in the URL is all that protects it')
    .option('--open', 'open the page in the default browser')
    .addHelpText('after', examples('sessionfold inspect -s file:./data', 'sessionfold inspect -s sqlite:./sessions.db --port 8080 --open'))
    .action(async (rawOptions: unknown, command: Command) => {
      const context = contextOf(command);
      const options = parseArg(optionsSchema, rawOptions, 'options');
      const { startInspector } = await import('@sessionfold/inspector');
      await withStore(context, 'read', async ({ store, where }) => {
        const service = await openSessionHistory({ store, readOnly: true, follow: true });
        try {
          const inspector = await startInspector({ store, service, storeName: where, host: options.host, port: options.port });
          // Listening before the URL is printed: whoever reads the URL may stop the server at once.
          const interrupted = untilInterrupted();
          if (!LOOPBACK.has(options.host)) {
            context.out.warn(`listening on ${options.host}: anyone who can reach it and has the token in the URL can read the whole store`);
          }
          if (context.out.json) await context.out.line({ url: inspector.url, origin: inspector.origin });
          else await context.out.text(`sessionfold inspect: ${inspector.url}`);
          await context.out.flush();
          context.out.log('Serving read-only; Ctrl-C stops.');
          if (options.open) openBrowser(inspector.url);
          await interrupted;
          await inspector.close();
        } finally {
          await service.close();
        }
      });
    });
}

function untilInterrupted(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

/** Opens `url` with the platform's opener; a missing one only means the user opens it by hand. */
function openBrowser(url: string): void {
  const [command, args] =
    process.platform === 'darwin' ? ['open', [url]] : process.platform === 'win32' ? ['cmd', ['/c', 'start', '""', url]] : ['xdg-open', [url]];
  const child = spawn(command as string, args as string[], { stdio: 'ignore', detached: true });
  child.on('error', () => undefined);
  child.unref();
}
