import type { Command } from 'commander';

/** `import-legacy <dir>`: registered once the legacy reader exists. */
export function registerImportLegacy(_program: Command): void {}
