// Loading in pieces (src/source.js, src/upload.js): progress as the file arrives; sources of unknown length (a
// stream, a download without its length) whose length and checksum only their end shows; downloads that fail
// or break off. The golden corpus (golden.test.js) covers every other rule, read from files and URLs.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { test } from 'node:test';

import { ArtifactError, load } from '../src/index.js';
import { CHUNK } from '../src/source.js';
import { GOLDEN, assertReplays } from '../testkit/io.js';

const MLP = join(GOLDEN, 'mlp.wgpt');
const BYTES = new Uint8Array(readFileSync(MLP)); // not a Buffer, whose slice() is a view

/**
 * A stream of `bytes` in pieces of `piece` bytes that is not a byte stream (as a DecompressionStream's output).
 * @param {Uint8Array} bytes
 * @param {number} piece
 */
function stream(bytes, piece) {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) controller.close();
      else controller.enqueue(bytes.slice(at, (at += piece)));
    },
  });
}

/**
 * Serve `body(path)` on 127.0.0.1 for `use(base URL)`: bytes without a Content-Length (chunked), or a status.
 * @param {(path: string, res: http.ServerResponse) => void} respond
 * @param {(base: string) => Promise<void>} use
 */
async function serving(respond, use) {
  const server = http.createServer((req, res) => respond(req.url ?? '', res));
  await new Promise((listening) => server.listen(0, '127.0.0.1', () => listening(null)));
  try {
    await use(`http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`);
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

test('progress: the header first, then each piece of the data, to every byte and every constant', async () => {
  /** @type {import('../src/index.js').Progress[]} */
  const seen = [];
  const program = await load(MLP, { tune: false, onProgress: (p) => seen.push(p) });
  program.destroy();
  const h = Number(new DataView(BYTES.buffer, BYTES.byteOffset).getBigUint64(16, true));
  const constants = program.spec.constants.size;
  assert.deepEqual(seen[0], { bytes: 32 + h, totalBytes: BYTES.length, tensors: 0, totalTensors: constants, source: MLP });
  assert.deepEqual(seen.at(-1), { bytes: BYTES.length, totalBytes: BYTES.length, tensors: constants, totalTensors: constants, source: MLP });
  assert.ok(seen.every((p, i) => !i || (p.bytes >= seen[i - 1].bytes && p.tensors >= seen[i - 1].tensors)));
});

test('a stream of unknown length: pieces of any size, its length and checksum checked at its end', async () => {
  for (const piece of [1, 7, 4096, CHUNK + 3]) {
    const program = await load(stream(BYTES, piece), { tune: false });
    await assertReplays(program, MLP, 'mlp');
    program.destroy();
  }
  const short = BYTES.subarray(0, BYTES.length - 64);
  await assert.rejects(load(stream(short, 1000)), (e) => e instanceof ArtifactError &&
    e.message === `<stream>: truncated: ${(BYTES.length - 64).toLocaleString('en')} bytes, the preamble says ${BYTES.length.toLocaleString('en')}`);
  await assert.rejects(load(stream(new Uint8Array([...BYTES, 0]), 1000)), (e) => e instanceof ArtifactError &&
    e.message === `<stream>: has trailing bytes: more than ${BYTES.length.toLocaleString('en')} bytes, the preamble says ${BYTES.length.toLocaleString('en')}`);
  const damaged = BYTES.slice();
  damaged[damaged.length - 70] ^= 1; // a data byte
  await assert.rejects(load(stream(damaged, 1000)), (e) => e instanceof ArtifactError && /tensor data is damaged/.test(e.message));
});

test('downloads: chunked, refused by the server, broken off', async () => {
  await serving((path, res) => {
    if (path === '/mlp.wgpt') {
      res.write(BYTES.subarray(0, 1000)); // no Content-Length: chunked
      res.end(BYTES.subarray(1000));
    } else if (path === '/broken.wgpt') {
      res.writeHead(200, { 'content-length': String(BYTES.length) });
      res.write(BYTES.subarray(0, BYTES.length - 100), () => res.destroy());
    } else {
      res.writeHead(404).end();
    }
  }, async (base) => {
    const program = await load(`${base}/mlp.wgpt`, { tune: false });
    await assertReplays(program, MLP, 'mlp');
    program.destroy();
    await assert.rejects(load(`${base}/missing.wgpt`), (e) => e instanceof ArtifactError && e.message === `${base}/missing.wgpt: HTTP 404 Not Found`);
    await assert.rejects(load(`${base}/broken.wgpt`), (e) => e instanceof ArtifactError &&
      e.message.startsWith(`${base}/broken.wgpt: the download broke off after `) && e.message.includes(` of ${BYTES.length.toLocaleString('en')} bytes: `));
  });
  await assert.rejects(load('http://127.0.0.1:9/x.wgpt'), (e) => e instanceof ArtifactError && /cannot fetch it/.test(e.message));
});
