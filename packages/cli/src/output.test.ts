import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Output } from './output.js';

/** Everything `write` hands to an Output's stdout, as the bytes stdout receives. */
async function bytesOf(texts: readonly string[]): Promise<Buffer> {
  const stdout = new PassThrough();
  const chunks: Buffer[] = [];
  stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
  const out = new Output({ json: false, quiet: true, stdout, stderr: new PassThrough() });
  for (const text of texts) if (out.append(text)) await out.flush();
  await out.flush();
  return Buffer.concat(chunks);
}

describe('Output', () => {
  it('hands stdout the UTF-8 bytes of ASCII and other text alike, in chunks and not', async () => {
    const lines = ['{"a":"plain"}\n', '{"b":"é ü"}\n', '{"c":"\u{1f600} 中文"}\n', `${'x'.repeat(70_000)}\n`, '{"d":"\u00ff"}\n'];
    const texts = [...lines, ...lines.slice(0, 3), ...Array.from({ length: 2000 }, (_, index) => `{"n":${index}}\n`)];
    expect((await bytesOf(texts)).equals(Buffer.from(texts.join(''), 'utf8'))).toBe(true);
  });
});
