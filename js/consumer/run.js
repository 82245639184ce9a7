// The package as a user gets it: `npm pack`, the tarball installed into a fresh project offline (its
// dependencies and Dawn linked from this checkout's node_modules), a plain-JavaScript consumer run and a
// strict-TypeScript one type-checked against the shipped .d.ts (skipLibCheck off, so the declarations
// must resolve every name they use) as a Node project without the dom library, compiled and run, both on
// a golden artifact through the public API only; the TypeScript one type-checked again with dom, as a
// browser project has it; then `npm publish --dry-run`.
//   node consumer/run.js        (npm run test:package)

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const js = dirname(here);
const golden = join(js, '..', 'tests', 'golden');
const manifest = JSON.parse(readFileSync(join(js, 'package.json'), 'utf8'));

/**
 * @param {string} command
 * @param {string[]} args
 * @param {string} cwd
 */
function run(command, args, cwd) {
  return execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
}

const tmp = mkdtempSync(join(tmpdir(), 'webgpu-torch-package-'));
try {
  const [packed] = JSON.parse(run('npm', ['pack', '--json', '--silent', '--pack-destination', tmp], js));
  const files = packed.files.map((/** @type {{path: string}} */ f) => f.path);
  for (const f of ['package.json', 'README.md', 'LICENSE', 'src/index.js', 'types/index.d.ts', 'types/session.d.ts', 'ts5/index.d.ts']) {
    assert.ok(files.includes(f), `the tarball lacks ${f}`);
  }
  const stray = files.filter((/** @type {string} */ f) => !/^(package\.json|README\.md|LICENSE|src\/|types\/|ts5\/)/.test(f));
  assert.deepEqual(stray, [], 'the tarball holds only the runtime, its types, README and LICENSE');

  const consumer = join(tmp, 'consumer');
  mkdirSync(consumer);
  for (const f of ['main.js', 'main.ts', 'tsconfig.json', 'tsconfig.dom.json']) copyFileSync(join(here, f), join(consumer, f));
  const local = (/** @type {string} */ name) => `file:${join(js, 'node_modules', name)}`;
  const linked = [...Object.keys(manifest.dependencies), ...Object.keys(manifest.peerDependencies), '@types/node'];
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({
    name: 'consumer', private: true, type: 'module',
    dependencies: { [manifest.name]: `file:${join(tmp, packed.filename)}`, ...Object.fromEntries(linked.map((n) => [n, local(n)])) },
  }, null, 2));
  run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'], consumer);

  process.stdout.write(run('node', ['main.js', golden], consumer));
  const tsc = join(js, 'node_modules', '.bin', 'tsc');
  run(tsc, ['-p', consumer], consumer);
  run(tsc, ['-p', join(consumer, 'tsconfig.dom.json')], consumer);
  process.stdout.write(run('node', [join('out', 'main.js'), golden], consumer));

  const dry = run('npm', ['publish', '--dry-run', '--json', '--silent'], js);
  assert.equal(JSON.parse(dry).name ?? JSON.parse(dry)[manifest.name]?.name, manifest.name);
  console.log(`package: ${packed.filename} (${files.length} files, ${packed.size} bytes) packs, installs, type-checks, runs and publishes (dry run)`);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
