// The constants' upload as the data streams in (docs/artifact.md, Running it): the reader hands out the data
// CHUNK bytes at a time, each piece goes at once to every constant whose bytes it holds, and nothing keeps it
// after that. So a load holds one chunk of the file, and what the queue has not yet copied to the device:
// after every WINDOW bytes written, the upload waits for the queue to finish them (Dawn keeps each write's
// staging copy until then). The data's CRC-32 is folded in piece by piece and checked at the end, with its
// length; the caller destroys what was uploaded when either is wrong, before anything runs.
//
// Alignment: the data starts 64-aligned in the file, every constant at a 64-aligned offset of the data, and
// every chunk but the last is CHUNK long, a multiple of 4; so each piece of a constant starts at a multiple of
// 4 bytes into it and, but the constant's last, is a multiple of 4 long, as writeBuffer needs: only a last
// piece gets a zero pad. A float16 constant the device cannot read (`widen`: fit.js's forDevice, without
// shader-f16) is widened piece by piece to float32, written at twice its offset.

import { checkData, checkLength, PREAMBLE } from './artifact.js';
import { crc32 } from './crc32.js';
import { widenHalf } from './dtypes.js';
import { CHUNK } from './source.js';

/** @typedef {import('./artifact.js').Container} Container */
/** @typedef {import('./artifact.js').ProgramSpec} ProgramSpec */
/** @typedef {import('./source.js').Reader} Reader */
/**
 * How far a load has come: `bytes` of the file's `totalBytes` read, `tensors` of its `totalTensors` constants
 * uploaded; `source` names the file (a path, a URL) as messages do, for a caller loading several at once.
 * @typedef {{bytes: number, totalBytes: number, tensors: number, totalTensors: number, source: string}} Progress
 */
/**
 * A constant on its way: `wide` when it is written widened to float32.
 * @typedef {{buffer: number, offset: number, nbytes: number, wide: boolean}} Pending
 */

/** Bytes written to the queue between waits for it to copy them: the most staging a load holds. */
export const WINDOW = 16 * CHUNK;

/**
 * Read the data from `reader` (just past the header) into the constant buffers `buffers` of `spec` (fitted to
 * the device: forDevice) but those in another file (`external`: another program's buffers), reporting each chunk to `onProgress`; ArtifactError when the data is not the length the
 * preamble says or not what its checksum says.
 * @param {Reader} reader
 * @param {Container} container
 * @param {ProgramSpec} spec
 * @param {GPUDevice} device
 * @param {GPUBuffer[]} buffers
 * @param {(progress: Progress) => void} [onProgress]
 */
export async function upload(reader, container, spec, device, buffers, onProgress) {
  /** @type {Pending[]} in order of offset */
  const waiting = [...spec.constants].filter(([, c]) => !c.external)
    .map(([buffer, c]) => ({ buffer, offset: c.offset, nbytes: c.nbytes, wide: c.widen === true }))
    .sort((a, b) => a.offset - b.offset);
  const total = waiting.length;
  /** @type {Pending[]} the constants begun and not finished (overlapping ones: several) */
  let open = [];
  let next = 0; // waiting[next] is the first not begun
  let done = 0;
  let crc = 0;
  let queued = 0;
  const start = PREAMBLE + container.headerLength;
  const report = () => onProgress?.({ bytes: reader.offset, totalBytes: container.size, tensors: done, totalTensors: total, source: reader.where });
  for (let at = 0; at < container.dataLength;) {
    const chunk = await reader.take(Math.min(CHUNK, container.dataLength - at));
    if (chunk.length < Math.min(CHUNK, container.dataLength - at)) checkLength(start + at + chunk.length, container, reader.where);
    const end = at + chunk.length;
    crc = crc32(chunk, crc);
    while (next < total && waiting[next].offset < end) open.push(waiting[next++]);
    for (const t of open) {
      const from = Math.max(at, t.offset);
      const to = Math.min(end, t.offset + t.nbytes);
      if (from < to) queued += write(device, buffers[t.buffer], t, from - t.offset, chunk.subarray(from - at, to - at));
    }
    const finished = open.filter((t) => t.offset + t.nbytes <= end);
    done += finished.length;
    open = open.filter((t) => t.offset + t.nbytes > end);
    at = end;
    if (queued >= WINDOW) {
      device.queue.submit([]); // Dawn sends the writes with the next submit
      await device.queue.onSubmittedWorkDone();
      queued = 0;
    }
    report();
  }
  if (reader.size === null && (await reader.take(1)).length) checkLength(Infinity, container, reader.where);
  checkData(spec, crc, reader.where);
  done = total; // constants of no bytes
  report();
}

/**
 * Write `bytes`, the piece of constant `t` from byte `at` of it, to its buffer; the bytes queued.
 * @param {GPUDevice} device
 * @param {GPUBuffer} buffer
 * @param {Pending} t
 * @param {number} at
 * @param {Uint8Array} bytes
 */
function write(device, buffer, t, at, bytes) {
  let out = bytes;
  if (t.wide) {
    const halves = bytes.byteOffset % 2 ? bytes.slice() : bytes; // a download's piece may start anywhere
    out = new Uint8Array(widenHalf(new Uint16Array(halves.buffer, halves.byteOffset, halves.length / 2)).buffer);
  }
  if (out.length % 4) { // the last piece of an odd count of 16-bit values
    const padded = new Uint8Array(out.length + 4 - (out.length % 4));
    padded.set(out);
    out = padded;
  }
  device.queue.writeBuffer(buffer, t.wide ? 2 * at : at, out);
  return out.length;
}
