// Loading at size: an artifact of three 128 MiB constants (lavapipe binds at most 128 MiB) loads in a child
// process (testkit/memory_child.js) whose peak host memory, past the warm runtime's own and the program's
// buffers (which lavapipe keeps in host memory), stays within 1.25 times the largest constant plus the
// header (issue 31): the loader streams the file, holding a chunk and the queue's window at a time, where
// reading it whole would take three times that. Its outputs show every constant arrived where it belongs.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

import { REPO } from '../testkit/io.js';
import { writeLarge } from '../testkit/large.js';

const MIB = 2 ** 20;

test('a 384 MiB artifact loads within 1.25 times its largest constant plus the header of host memory', async () => {
  const folder = mkdtempSync(join(tmpdir(), 'webgpu-torch-large-'));
  try {
    const path = join(folder, 'large.wgpt');
    const { largest, header, size, views } = await writeLarge(path, 3, 128 * MIB);
    const child = join(REPO, 'js', 'testkit', 'memory_child.js');
    const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', child, path], { maxBuffer: 2 ** 24 });
    const m = JSON.parse(stdout);
    const host = m.peak - m.baseline - m.device;
    console.log(`${(size / MIB).toFixed(1)} MiB file, largest constant ${largest / MIB} MiB: runtime baseline ` +
      `${(m.baseline / MIB).toFixed(1)} MiB, peak ${(m.peak / MIB).toFixed(1)} MiB, device buffers ${(m.device / MIB).toFixed(1)} MiB, ` +
      `host memory of the load ${(host / MIB).toFixed(1)} MiB (ArrayBuffers at most ${(m.arrayBuffers / MIB).toFixed(1)} MiB)`);
    assert.ok(host <= 1.25 * largest + header, `the load took ${(host / MIB).toFixed(1)} MiB of host memory`);
    assert.deepEqual(m.outputs, views);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});
