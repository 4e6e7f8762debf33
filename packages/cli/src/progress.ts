import { createRequire } from 'node:module';
import type cliProgressModule from 'cli-progress';
import type { Output } from './output.js';

/** Counts work done; draws a bar with items done, rate and ETA on a terminal, and nothing elsewhere. */
export interface Progress {
  /** Adds `count` items done (default 1). */
  tick(count?: number): void;
  /** Sets the expected total, when it becomes known. */
  total(total: number): void;
  stop(): void;
}

const SILENT: Progress = { tick: () => undefined, total: () => undefined, stop: () => undefined };

/** A progress bar for `label` over `total` items (0: unknown yet), or a silent one where no bar may be drawn. */
export function progress(out: Output, label: string, total = 0): Progress {
  if (!out.progressAllowed) return SILENT;
  // Loaded only where a bar is drawn: a command whose output goes to a pipe or a file never needs it.
  const cliProgress = createRequire(import.meta.url)('cli-progress') as typeof cliProgressModule;
  const bar = new cliProgress.SingleBar(
    {
      stream: out.stderr,
      format: `${label} [{bar}] {value}/{total} | {rate}/s | ETA {eta_formatted}`,
      etaBuffer: 50,
      fps: 10,
      clearOnComplete: true,
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
  const started = Date.now();
  let done = 0;
  bar.start(Math.max(total, 1), 0, { rate: '0' });
  return {
    tick(count = 1) {
      done += count;
      const seconds = Math.max((Date.now() - started) / 1000, 0.001);
      bar.update(done, { rate: Math.round(done / seconds).toString() });
    },
    total(value) {
      bar.setTotal(Math.max(value, 1));
    },
    stop() {
      bar.stop();
    },
  };
}
