import type { Writable } from 'node:stream';

/** Output gathered before one write to stdout. */
const CHUNK = 64 * 1024;

/**
 * Where a command's output goes: machine or human output on stdout, logs and warnings on stderr. Writes wait
 * for a full stdout to drain, so a command streaming millions of lines holds only what the pipe holds.
 */
export class Output {
  readonly json: boolean;
  readonly quiet: boolean;
  readonly #stdout: Writable;
  readonly #stderr: Writable;

  constructor(options: { json: boolean; quiet: boolean; stdout?: Writable; stderr?: Writable }) {
    this.json = options.json;
    this.quiet = options.quiet;
    this.#stdout = options.stdout ?? process.stdout;
    this.#stderr = options.stderr ?? process.stderr;
  }

  /** Text not yet handed to stdout. */
  #pending = '';
  #flushScheduled = false;

  /**
   * Writes text to stdout. Lines are gathered into chunks of 64 KiB (one write call per line made a streamed
   * export spend more time in writes than in reading the store); what is left is handed over as soon as the
   * command waits for anything, and the caller waits while the pipe is full.
   */
  write(text: string): Promise<void> {
    return this.append(text) ? this.flush() : Promise.resolve();
  }

  /**
   * Gathers text for stdout without a promise; true means a chunk is full and the caller must `await flush()`
   * before appending more. A loop over millions of events calls this rather than awaiting `write` per line.
   */
  append(text: string): boolean {
    this.#pending += text;
    if (this.#pending.length >= CHUNK) return true;
    if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      setImmediate(() => {
        this.#flushScheduled = false;
        void this.flush();
      });
    }
    return false;
  }

  /** Resolves when stdout has taken what it refused; undefined while it takes everything. */
  #drained: Promise<void> | undefined;

  /**
   * Hands everything written so far to stdout; resolves once stdout can take more. While stdout is full (a
   * reader slower than the command), every flush waits for it to drain first, including one scheduled by
   * `append`: text is held only up to one chunk, never queued in the stream without bound.
   */
  async flush(): Promise<void> {
    while (this.#drained) await this.#drained;
    const text = this.#pending;
    if (text === '') return;
    this.#pending = '';
    if (this.#stdout.write(utf8Bytes(text))) return;
    const drained = new Promise<void>((resolve, reject) => {
      const done = (error?: Error) => {
        this.#stdout.off('drain', done);
        this.#stdout.off('error', done);
        this.#drained = undefined;
        if (error) reject(error);
        else resolve();
      };
      this.#stdout.once('drain', done);
      this.#stdout.once('error', done);
    });
    this.#drained = drained;
    await drained;
  }

  /** One JSON document (the `--json` result of a command). */
  document(value: unknown): Promise<void> {
    return this.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** One JSON line (a stream of events or rows). */
  line(value: unknown): Promise<void> {
    return this.appendLine(value) ? this.flush() : Promise.resolve();
  }

  /** `append` of one JSON line: true means the caller must `await flush()` first. */
  appendLine(value: unknown): boolean {
    return this.append(`${JSON.stringify(value)}\n`);
  }

  /** A line of human text on stdout. */
  text(line: string): Promise<void> {
    return this.write(`${line}\n`);
  }

  /** A table with a header row; columns are padded to their widest cell. */
  async table(header: readonly string[], rows: readonly (readonly string[])[]): Promise<void> {
    const widths = header.map((title, index) => Math.max(title.length, ...rows.map((row) => (row[index] ?? '').length)));
    const format = (row: readonly string[]) =>
      row
        .map((cell, index) => (index === row.length - 1 ? cell : cell.padEnd(widths[index] ?? 0)))
        .join('  ')
        .trimEnd();
    await this.text(format(header));
    for (const row of rows) await this.text(format(row));
  }

  /** Progress and information on stderr; silent with --quiet. */
  log(message: string): void {
    if (!this.quiet) this.#stderr.write(`${message}\n`);
  }

  /** A warning on stderr, shown even with --quiet. */
  warn(message: string): void {
    this.#stderr.write(`warning: ${message}\n`);
  }

  /** A plain line on stderr (a hint after an error), shown even with --quiet. */
  note(message: string): void {
    this.#stderr.write(`${message}\n`);
  }

  /** An error on stderr. */
  error(message: string): void {
    this.#stderr.write(`error: ${message}\n`);
  }

  /** Whether a progress bar may be drawn: only on a terminal, and never with --quiet or --json. */
  get progressAllowed(): boolean {
    return !this.quiet && !this.json && (this.#stderr as { isTTY?: boolean }).isTTY === true;
  }

  /** The stream progress bars draw on. */
  get stderr(): Writable {
    return this.#stderr;
  }
}

const encoder = new TextEncoder();

/**
 * `text` as UTF-8 bytes. `encodeInto` a buffer of one byte per character took half the time of letting the stream
 * encode the string (a streamed read spent a seventh of its time there), and fills it exactly when the text is
 * ASCII, as JSON lines mostly are; any other text is encoded again the usual way.
 */
function utf8Bytes(text: string): Buffer {
  const bytes = Buffer.allocUnsafe(text.length);
  return encoder.encodeInto(text, bytes).read === text.length ? bytes : Buffer.from(text, 'utf8');
}
