// The corpora in a browser: headless Chromium loads tests.html from a server on 127.0.0.1 that serves js/,
// tests/golden and the model corpus; the page runs the same checks as test/golden.test.js and
// test/corpus.test.js and posts its results back.
//
//   node browser/run.js [--adapter swiftshader|lavapipe] [--chromium PATH] [--timeout SECONDS]
//
// The adapter (chromium.js): SwiftShader, Chromium's own software Vulkan (core WebGPU, no shader-f16, 10
// storage buffers per stage); or lavapipe, Mesa's software Vulkan, which Chromium blocks for core WebGPU and
// reaches in compatibility mode through ANGLE's OpenGL ES on Vulkan. CHROMIUM names the browser too.
//
// Prints one line per check and "N passed, M failed"; exits 1 on a failure or a timeout.

import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import { extname, join, normalize, sep } from 'node:path';

import { CORPUS, GOLDEN, REPO, artifacts, generations } from '../testkit/io.js';
import { ADAPTERS, chromiumArgs } from './chromium.js';

const args = process.argv.slice(2);
/** @param {string} flag @param {string} fallback */
const option = (flag, fallback) => (args.includes(flag) ? args[args.indexOf(flag) + 1] : fallback);
const chromium = option('--chromium', process.env.CHROMIUM || 'chromium');
const timeout = Number(option('--timeout', '900'));
const adapter = option('--adapter', 'swiftshader');
if (!(adapter in ADAPTERS)) throw new Error(`--adapter: one of ${Object.keys(ADAPTERS).join(', ')}`);

/** URL prefix → folder served under it. */
const ROOTS = /** @type {[string, string][]} */ ([['/js/', join(REPO, 'js')], ['/golden/', GOLDEN], ['/corpus/', CORPUS]]);
const TYPES = /** @type {Record<string, string>} */ ({ '.js': 'text/javascript', '.html': 'text/html', '.json': 'application/json' });

const manifest = {
  golden: artifacts(GOLDEN),
  bad: existsSync(join(GOLDEN, 'bad', 'expected.json')) ? JSON.parse(readFileSync(join(GOLDEN, 'bad', 'expected.json'), 'utf8')) : {},
  models: artifacts(CORPUS),
  generations: generations(CORPUS),
};

/**
 * The file a GET path names, if it lies inside a served folder.
 * @param {string} path
 */
function resolve(path) {
  for (const [prefix, folder] of ROOTS) {
    if (!path.startsWith(prefix)) continue;
    const file = normalize(join(folder, decodeURIComponent(path.slice(prefix.length))));
    if (file.startsWith(folder + sep) && existsSync(file) && statSync(file).isFile()) return file;
  }
  return null;
}

/** @type {(code: number) => void} */
let finish = () => {};
const done = new Promise((resolveDone) => { finish = resolveDone; });

const server = http.createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method === 'POST') {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      res.end();
      const message = JSON.parse(body);
      if (path === '/log') console.log(message.line);
      if (path === '/result') finish(report(message));
    });
    return;
  }
  if (path === '/manifest.json') {
    res.setHeader('content-type', TYPES['.json']);
    res.end(JSON.stringify(manifest));
    return;
  }
  const file = resolve(path);
  if (!file) {
    res.statusCode = 404;
    res.end();
    return;
  }
  res.setHeader('content-type', TYPES[extname(file)] ?? 'application/octet-stream');
  res.end(readFileSync(file));
});

/**
 * @param {{passed: number, failed: string[]}} result
 * @returns {number}
 */
function report(result) {
  for (const f of result.failed) console.log(`FAILED ${f}`);
  console.log(`${result.passed} passed, ${result.failed.length} failed`);
  return result.failed.length ? 1 : 0;
}

server.listen(0, '127.0.0.1', async () => {
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
  const page = `http://127.0.0.1:${port}/js/browser/tests.html?featureLevel=${ADAPTERS[adapter].featureLevel}`;
  const browser = spawn(chromium, chromiumArgs(adapter, join(REPO, 'build', `chromium-profile-${adapter}`), page), { stdio: 'ignore' });
  browser.on('error', (e) => {
    console.log(`cannot start ${chromium}: ${e.message} (install Chromium, or name it with --chromium or CHROMIUM)`);
    finish(1);
  });
  const timer = setTimeout(() => {
    console.log(`no result within ${timeout} s`);
    finish(1);
  }, timeout * 1000);
  const code = await done;
  clearTimeout(timer);
  browser.kill();
  server.close();
  process.exitCode = code;
});
