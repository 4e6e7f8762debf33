import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';

const read = (name: string) => readFileSync(new URL(name, import.meta.url), 'utf8');

it('the README shows the conformance call of src/conformance.test.ts word for word', () => {
  const region = /\/\/ #region conformance\n([\s\S]*?)\/\/ #endregion conformance/.exec(read('./conformance.test.ts'))?.[1];
  expect(region).toBeDefined();
  expect(read('../README.md')).toContain(`\`\`\`ts\n${region}\`\`\``);
});
