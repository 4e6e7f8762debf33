// The API report: one file per published entry point (every `exports` entry of every published package),
// made by API Extractor from the built declarations, so a change to the public surface shows in review.
//   node scripts/api-report.mjs           fails when a report differs from the one in api/
//   node scripts/api-report.mjs --update  writes the reports into api/ (npm run api:update)
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Extractor, ExtractorConfig } from '@microsoft/api-extractor';

const update = process.argv.includes('--update');
const root = fileURLToPath(new URL('..', import.meta.url));
const reportFolder = join(root, 'api');
const tempFolder = join(root, 'node_modules', '.cache', 'api-report');
mkdirSync(reportFolder, { recursive: true });
mkdirSync(tempFolder, { recursive: true });

const entries = [];
for (const dir of readdirSync(join(root, 'packages')).sort()) {
  const folder = join(root, 'packages', dir);
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8'));
  } catch {
    continue;
  }
  if (manifest.private || !manifest.exports) continue;
  for (const [subpath, target] of Object.entries(manifest.exports)) {
    const types = typeof target === 'object' ? target.types : undefined;
    if (!types) continue;
    const unscoped = manifest.name.replace(/^@[^/]+\//, '');
    const suffix = subpath === '.' ? '' : `-${subpath.replace(/^\.\//, '').replaceAll('/', '-')}`;
    entries.push({ name: `${unscoped}${suffix}`, label: `${manifest.name}${subpath.slice(1)}`, folder, manifest, types });
  }
}

// Not release-tagged (@public/@beta): every exported name is public. Doc-comment syntax is TypeDoc's to check
// (npm run docs). A type the surface uses but this entry point does not export is a finding for review, written into
// the report ("ae-forgotten-export") rather than failing: most are exported by a sibling entry point of the same
// package (`./session` uses the kernel's `StreamReducer`), which API Extractor, reading one entry at a time, cannot see.
const messages = {
  compilerMessageReporting: { default: { logLevel: 'warning' } },
  extractorMessageReporting: {
    default: { logLevel: 'warning' },
    'ae-missing-release-tag': { logLevel: 'none', addToApiReportFile: false },
    'ae-forgotten-export': { logLevel: 'none', addToApiReportFile: true },
    'ae-internal-missing-underscore': { logLevel: 'none', addToApiReportFile: false },
    // Whether a member has a doc comment is a question for review of the docs, not of the surface.
    'ae-undocumented': { logLevel: 'none', addToApiReportFile: false },
  },
  tsdocMessageReporting: { default: { logLevel: 'none', addToApiReportFile: false } },
};

const quiet = new Set([
  'console-api-report-copied',
  'console-api-report-created',
  'console-api-report-diff',
  'console-api-report-not-copied',
  'console-api-report-unchanged',
  'console-compiler-version-notice',
  'console-preamble',
]);
/**
 * The report with the members of each zod enum's type in sorted order: the compiler prints them in the order it
 * first met their string literals, which differs between a fresh and an incremental build of the same code.
 */
function stableReport(text) {
  const lines = text.split('\n');
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    out.push(lines[i]);
    if (!lines[i].endsWith('ZodEnum<{')) continue;
    const members = [];
    while (i + 1 < lines.length && !lines[i + 1].trimStart().startsWith('}')) members.push(lines[++i]);
    out.push(...members.sort());
  }
  return out.join('\n');
}

/** Whether two reports say the same, zod enum members in any order. */
function sameReport(committed, generated) {
  try {
    return stableReport(readFileSync(committed, 'utf8')) === stableReport(readFileSync(generated, 'utf8'));
  } catch {
    return false;
  }
}

const changed = [];
let failed = false;
for (const entry of entries) {
  const config = ExtractorConfig.prepare({
    configObjectFullPath: join(entry.folder, 'api-extractor.json'),
    packageJsonFullPath: join(entry.folder, 'package.json'),
    packageJson: entry.manifest,
    configObject: {
      projectFolder: entry.folder,
      mainEntryPointFilePath: join(entry.folder, entry.types),
      bundledPackages: [],
      compiler: {
        overrideTsconfig: {
          compilerOptions: {
            target: 'ES2022',
            lib: ['ES2023', 'ES2024.String'],
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            strict: true,
            skipLibCheck: true,
            types: ['node'],
          },
          include: [join(entry.folder, entry.types)],
        },
      },
      apiReport: {
        enabled: true,
        reportFileName: `${entry.name}.api.md`,
        reportFolder,
        reportTempFolder: tempFolder,
        includeForgottenExports: false,
      },
      docModel: { enabled: false },
      dtsRollup: { enabled: false },
      tsdocMetadata: { enabled: false },
      newlineKind: 'lf',
      messages,
    },
  });
  let problems = 0;
  const result = Extractor.invoke(config, {
    localBuild: update,
    showVerboseMessages: false,
    messageCallback: (message) => {
      // The "report changed" notice is summarised once below, with the command that updates it.
      if (quiet.has(message.messageId)) message.handled = true;
      else if (message.logLevel === 'warning' || message.logLevel === 'error') problems += 1;
    },
  });
  const file = `${entry.name}.api.md`;
  if (update) writeFileSync(join(reportFolder, file), stableReport(readFileSync(join(reportFolder, file), 'utf8')));
  else if (result.apiReportChanged && !sameReport(join(reportFolder, file), join(tempFolder, file))) changed.push(entry);
  if (problems > 0 || result.errorCount > 0) {
    failed = true;
    console.error(`api: ${entry.label}: ${problems + result.errorCount} problem(s) above`);
  }
}

// A report whose entry point is gone is stale: removed on update, a difference otherwise.
const expected = new Set(entries.map((entry) => `${entry.name}.api.md`));
for (const file of readdirSync(reportFolder).filter((name) => name.endsWith('.api.md') && !expected.has(name))) {
  if (update) rmSync(join(reportFolder, file));
  else changed.push({ name: file.replace(/\.api\.md$/, ''), label: `api/${file} (no such entry point)`, stale: true });
}

if (changed.length > 0 && !update) {
  for (const entry of changed) {
    const file = `${entry.name}.api.md`;
    const diff = spawnSync('git', ['diff', '--no-index', '--no-color', join('api', file), join(tempFolder, file)], { cwd: root, encoding: 'utf8' });
    const lines = (diff.stdout || `api/${file}: ${entry.stale ? 'no entry point has this report any more' : 'a new entry point, not yet reported'}\n`).split(
      '\n',
    );
    console.error(lines.slice(0, 80).join('\n') + (lines.length > 80 ? `\n… (${lines.length - 80} more lines)` : ''));
  }
  console.error(
    `api: the public API differs from the committed report for ${changed.map((e) => e.label).join(', ')}.\n` +
      `     Review the change (git diff api/ after updating) and run \`npm run api:update\` to accept it.`,
  );
  process.exit(1);
}
if (failed) process.exit(1);
console.log(`api: ${update ? 'wrote' : 'checked'} ${entries.length} API reports in api/${update && changed.length ? ` (${changed.length} changed)` : ''}`);
