// The bytes of an artifact or a JSON file, read front to back in pieces: given as bytes, a Blob (a dropped
// File) or a stream, fetched from a URL, or read from a file (Node). A multi-gigabyte artifact never sits in memory whole:
// a Reader hands out at most CHUNK bytes at a time, from one buffer it reuses. In a browser, a download may be
// kept in the Cache API and read from there at the next load (`artifactCache`).

import { ArtifactError } from './errors.js';
import { isNode } from './env.js';

/** @typedef {ArrayBuffer | ArrayBufferView | Blob | ReadableStream<Uint8Array> | URL | string} Source */
/**
 * @typedef {object} SourceOptions
 * @property {string | boolean} [artifactCache] in a browser, keep downloaded artifacts in the Cache API under
 *   this name (true: "webgpu_torch-artifacts") and read them from there at later loads of the same URL
 */

/** The most bytes a reader holds of a source at once (a multiple of 4: see Reader.take). */
export const CHUNK = 4 * 2 ** 20;
const DEFAULT_CACHE = 'webgpu_torch-artifacts';

/** @param {number} n */
const count = (n) => n.toLocaleString('en');

/**
 * What a reading found of its source, when it ends: `sound`, read whole and undamaged (a download is kept in
 * the cache only then); `damaged`, refused (a copy read from the cache is dropped from it); `unknown`, the load
 * failed for another reason (the device), or the source is not an artifact read through.
 * @typedef {'sound' | 'damaged' | 'unknown'} Verdict
 */
/**
 * Where a Reader's bytes come from: `read(n)` gives the next `min(n, bytes left)` bytes, n at most CHUNK, as a
 * view valid until the next read; `close(verdict)` releases the source.
 * @typedef {{read(n: number): Promise<Uint8Array>, close(verdict: Verdict): Promise<void>}} Pieces
 */

/** A source opened for reading, front to back. */
export class Reader {
  /**
   * @param {string} where a name for the source in messages (a path, a URL, "<bytes>")
   * @param {number | null} size its length in bytes where known before reading it, else null (a download
   *   without a Content-Length that is its length)
   * @param {Pieces} pieces
   */
  constructor(where, size, pieces) {
    this.where = where;
    this.size = size;
    this.pieces = pieces;
    /** bytes handed out so far */
    this.offset = 0;
  }

  /**
   * The next `min(n, bytes left)` bytes: fewer than `n` only at the end of the source. The view is valid
   * until the next take (it may be a buffer the reader reuses); a take of at most CHUNK bytes holds no more
   * than that in memory.
   * @param {number} n
   * @returns {Promise<Uint8Array>}
   */
  async take(n) {
    const out = n <= CHUNK ? await this.pieces.read(n) : await this.whole(n);
    this.offset += out.length;
    return out;
  }

  /**
   * The next `min(n, bytes left)` bytes in an array of their own: a header past CHUNK (a large model's
   * sources), a JSON file. Its length comes from what arrives, never from `n` (a hostile preamble's).
   * @param {number} n
   * @private
   */
  async whole(n) {
    /** @type {Uint8Array[]} */
    const parts = [];
    let got = 0;
    while (got < n) {
      const part = await this.pieces.read(Math.min(CHUNK, n - got));
      if (!part.length) break;
      parts.push(part.slice());
      got += part.length;
    }
    const out = new Uint8Array(got);
    parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
    return out;
  }

  /** Every byte left, held whole (a JSON file). */
  async rest() {
    return this.take(Number.MAX_SAFE_INTEGER);
  }

  /**
   * Release the source, saying what was found of it.
   * @param {Verdict} verdict
   */
  async close(verdict) {
    await this.pieces.close(verdict);
  }
}

/**
 * Bytes the caller already holds: views of them, no copy.
 * @param {Uint8Array} bytes
 * @returns {Pieces}
 */
function bytesPieces(bytes) {
  let at = 0;
  return {
    read: async (n) => bytes.subarray(at, (at += n)),
    close: async () => {},
  };
}

/** A file (Node), read into one buffer CHUNK long. */
class FilePieces {
  /**
   * @param {import('node:fs/promises').FileHandle} handle
   * @param {string} where
   */
  constructor(handle, where) {
    this.handle = handle;
    this.where = where;
    this.position = 0;
    /** @type {Uint8Array | null} */
    this.block = null;
  }

  /** @param {number} n */
  async read(n) {
    const block = (this.block ??= new Uint8Array(CHUNK));
    let got = 0;
    while (got < n) {
      const { bytesRead } = await this.handle.read(block, got, n - got, this.position).catch((e) => {
        throw new ArtifactError(`${this.where}: ${/** @type {Error} */ (e).message}`);
      });
      if (!bytesRead) break;
      got += bytesRead;
      this.position += bytesRead;
    }
    return block.subarray(0, got);
  }

  async close() {
    await this.handle.close();
  }
}

/**
 * A ReadableStream (a download, a Blob). A byte stream (fetch's bodies and Blobs' in browsers) is read into one
 * buffer CHUNK long, reused (a BYOB reader: the stream makes no piece of its own, which would be garbage until
 * collected: hundreds of MB of it for a large download). Another stream's pieces are handed out as views
 * when one holds the bytes asked for, else gathered into that buffer. Each piece is also written to `keep`
 * (the cache), which takes them as fast as it stores them: the stream is read no faster.
 */
class StreamPieces {
  /**
   * @param {ReadableStream<Uint8Array>} stream
   * @param {string} where
   * @param {number | null} size
   * @param {Keeper | null} keep
   * @param {() => Promise<unknown>} evict drops the source from the cache it was read from (if one)
   */
  constructor(stream, where, size, keep, evict) {
    /** @type {ReadableStreamBYOBReader | null} */
    this.bytes = null;
    try {
      this.bytes = stream.getReader({ mode: 'byob' });
    } catch { // not a byte stream
    }
    this.stream = this.bytes ?? stream.getReader();
    this.where = where;
    this.size = size;
    this.keep = keep;
    this.evict = evict;
    /** @type {Uint8Array} the last piece of a stream that is not a byte stream */
    this.piece = new Uint8Array(0);
    this.at = 0;
    /** bytes read from the stream */
    this.received = 0;
    /** @type {Uint8Array | null} */
    this.block = null;
    this.done = false;
  }

  /** @param {number} n */
  async read(n) {
    return this.bytes ? this.readInto(this.bytes, n) : this.gather(n);
  }

  /**
   * A byte stream's next `n` bytes, read into the block (each read transfers its buffer to the stream and
   * back).
   * @param {ReadableStreamBYOBReader} reader
   * @param {number} n
   */
  async readInto(reader, n) {
    let buffer = /** @type {ArrayBuffer} */ (this.block?.buffer ?? new ArrayBuffer(CHUNK));
    let got = 0;
    while (got < n && !this.done) {
      const next = await this.next(() => reader.read(new Uint8Array(buffer, got, n - got)));
      if (next.value) buffer = /** @type {ArrayBuffer} */ (next.value.buffer);
      if (next.done || !next.value) {
        this.done = true;
      } else {
        got += next.value.length;
        await this.keep?.write(next.value.slice()); // the block is read into again: the cache keeps a copy
      }
    }
    this.block = new Uint8Array(buffer);
    return this.block.subarray(0, got);
  }

  /**
   * Another stream's next `n` bytes: a view of its piece, or gathered into the block.
   * @param {number} n
   */
  async gather(n) {
    if (this.piece.length - this.at >= n) return this.piece.subarray(this.at, (this.at += n));
    const block = (this.block ??= new Uint8Array(CHUNK));
    let got = 0;
    while (got < n && (this.at < this.piece.length || (await this.pull()))) {
      const k = Math.min(n - got, this.piece.length - this.at);
      block.set(this.piece.subarray(this.at, this.at + k), got);
      this.at += k;
      got += k;
    }
    return block.subarray(0, got);
  }

  /** The next piece of a stream that is not a byte stream; false at its end. */
  async pull() {
    if (this.done) return false;
    const stream = /** @type {ReadableStreamDefaultReader<Uint8Array>} */ (this.stream);
    const next = await this.next(() => stream.read());
    if (next.done) {
      this.done = true;
      return false;
    }
    this.piece = next.value;
    this.at = 0;
    await this.keep?.write(next.value);
    return true;
  }

  /**
   * A read of the stream, and the bytes it brings counted; a failure (a download broken off) as an ArtifactError.
   * @param {() => Promise<ReadableStreamReadResult<Uint8Array<any>>>} read
   * @returns {Promise<ReadableStreamReadResult<Uint8Array>>}
   */
  async next(read) {
    try {
      const next = await read();
      this.received += next.value?.length ?? 0;
      return next;
    } catch (e) {
      const of = this.size === null ? '' : ` of ${count(this.size)}`;
      throw new ArtifactError(`${this.where}: the download broke off after ${count(this.received)}${of} bytes: ` +
        `${/** @type {Error} */ (e)?.message ?? e}`);
    }
  }

  /** @param {Verdict} verdict */
  async close(verdict) {
    const whole = this.done || this.received === this.size; // a download of known length is not read past its end
    if (!this.done) await this.stream.cancel().catch(() => {});
    await this.keep?.close(verdict === 'sound' && whole);
    if (verdict === 'damaged') await this.evict().catch(() => {});
  }
}

/**
 * @param {ReadableStream<Uint8Array>} stream
 * @param {string} where
 * @param {number | null} size
 * @param {Keeper | null} [keep] the cache to write it to
 * @param {() => Promise<unknown>} [evict] how to drop it from the cache it comes from
 */
const streamReader = (stream, where, size, keep = null, evict = async () => {}) =>
  new Reader(where, size, new StreamPieces(stream, where, size, keep, evict));

/**
 * Open `source` for reading: bytes, Blobs and streams as they are (a stream's length unknown until its end), a
 * file path or file: URL from disk (Node), any other URL fetched (in a browser through the cache
 * `options.artifactCache` names, where set).
 * @param {Source} source
 * @param {SourceOptions} [options]
 * @returns {Promise<Reader>}
 */
export async function openSource(source, options = {}) {
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) {
    const bytes = source instanceof ArrayBuffer ? new Uint8Array(source) : new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
    return new Reader('<bytes>', bytes.length, bytesPieces(bytes));
  }
  if (typeof Blob !== 'undefined' && source instanceof Blob) {
    return streamReader(source.stream(), /** @type {any} */ (source).name || '<blob>', source.size);
  }
  if (typeof ReadableStream !== 'undefined' && source instanceof ReadableStream) return streamReader(source, '<stream>', null);
  const where = String(source);
  if (isNode && (!isUrl(where) || where.startsWith('file:'))) return openFile(source instanceof URL || where.startsWith('file:') ? new URL(where) : where, where);
  const name = options.artifactCache === true ? DEFAULT_CACHE : options.artifactCache || null;
  return download(new URL(where, globalThis.location?.href), where, name && typeof caches !== 'undefined' ? name : null);
}

/**
 * The bytes of `source` (a small file: JSON) and a name for it in messages.
 * @param {Source} source
 * @returns {Promise<{bytes: Uint8Array, where: string}>}
 */
export async function readSource(source) {
  const reader = await openSource(source);
  try {
    return { bytes: await reader.rest(), where: reader.where };
  } finally {
    await reader.close('unknown');
  }
}

/** A source that is not there: a path with no file, an HTTP 404 (readIfThere's null). */
class Missing extends ArtifactError {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'ArtifactError';
  }
}

/**
 * The bytes of `source` as readSource gives them, or null where there is no such file: a model folder's
 * optional files.
 * @param {Source} source
 * @returns {Promise<{bytes: Uint8Array, where: string} | null>}
 */
export async function readIfThere(source) {
  try {
    return await readSource(source);
  } catch (e) {
    if (e instanceof Missing) return null;
    throw e;
  }
}

/**
 * @param {URL | string} path
 * @param {string} where
 */
async function openFile(path, where) {
  const { open } = await import('node:fs/promises');
  try {
    const handle = await open(path, 'r');
    return new Reader(where, (await handle.stat()).size, new FilePieces(handle, where));
  } catch (e) {
    const code = /** @type {NodeJS.ErrnoException} */ (e).code;
    if (code === 'ENOENT') throw new Missing(`${where}: no such file`);
    throw new ArtifactError(`${where}: ${/** @type {Error} */ (e).message}`);
  }
}

/**
 * A download: from the cache `cacheName` where it holds the URL, else fetched (and, with a cache, kept in it
 * as it arrives, where the browser's storage has room).
 * @param {URL} url
 * @param {string} where
 * @param {string | null} cacheName
 */
async function download(url, where, cacheName) {
  const cache = cacheName ? await caches.open(cacheName).catch(() => null) : null;
  const hit = await cache?.match(url).catch(() => undefined);
  if (hit?.body) return streamReader(hit.body, where, length(hit), null, () => /** @type {Cache} */ (cache).delete(url));
  let response;
  try {
    response = await fetch(url);
  } catch (e) {
    throw new ArtifactError(`${where}: cannot fetch it: ${/** @type {Error} */ (e).message}`);
  }
  const status = `${where}: HTTP ${response.status} ${response.statusText}`;
  if (response.status === 404) throw new Missing(status);
  if (!response.ok) throw new ArtifactError(status);
  if (!response.body) throw new ArtifactError(`${where}: the response has no body`);
  const size = length(response);
  const keep = cache && (await room(where, size)) ? new Keeper(cache, url, where, size) : null;
  return streamReader(response.body, where, size, keep);
}

/**
 * A response's length where its headers say it: a Content-Length of the body as sent, which is the
 * file's unless the server compressed it.
 * @param {Response} response
 */
function length(response) {
  const header = response.headers.get('content-length');
  if (header === null || response.headers.get('content-encoding')) return null;
  const n = Number(header);
  return Number.isSafeInteger(n) && n >= 0 ? n : null;
}

/**
 * Whether the browser's storage has room for `size` more bytes (unknown: assumed so; a put past the quota
 * then fails, and is reported as this would be).
 * @param {string} where
 * @param {number | null} size
 */
async function room(where, size) {
  const estimate = await globalThis.navigator?.storage?.estimate?.().catch(() => null);
  if (!estimate?.quota || size === null || (estimate.usage ?? 0) + size <= estimate.quota) return true;
  notKept(where, `its ${gib(size)} GiB would pass the browser's storage quota (${gib(estimate.usage ?? 0)} of ` +
    `${gib(estimate.quota)} GiB used)`);
  return false;
}

/** @param {number} n */
const gib = (n) => (n / 2 ** 30).toFixed(2);

/**
 * @param {string} where
 * @param {string} why
 */
function notKept(where, why) {
  console.warn(`webgpu-torch: ${where} is loaded but not kept in the artifact cache: ${why}`);
}

/**
 * A download being written into the cache, piece by piece: committed by close(true) once the whole file is
 * read and found sound, dropped otherwise (a damaged copy is never kept; one read from the cache and found
 * damaged is dropped from it: StreamPieces.close). A failure to store it (the storage quota: QuotaExceededError) never
 * fails the load: the cache is only for the next one, and a warning says why it was not kept.
 */
class Keeper {
  /**
   * @param {Cache} cache
   * @param {URL} url
   * @param {string} where
   * @param {number | null} size
   */
  constructor(cache, url, where, size) {
    const { readable, writable } = new TransformStream();
    this.writer = writable.getWriter();
    this.where = where;
    /** @type {unknown} why it is not being kept, once a write or the put failed */
    this.failed = null;
    /** @type {Record<string, string>} */
    const headers = size === null ? {} : { 'content-length': String(size) };
    this.put = cache.put(url, new Response(readable, { headers })).catch((e) => {
      this.failed ??= e;
      this.writer.abort(e).catch(() => {}); // a put that failed before reading it all: no write waits on it
    });
  }

  /** @param {Uint8Array} piece */
  async write(piece) {
    if (this.failed) return;
    try {
      await this.writer.ready; // the cache has taken what came before: pieces never pile up here
      this.writer.write(piece).catch((e) => { this.failed ??= e; });
    } catch (e) {
      this.failed ??= e;
    }
  }

  /** @param {boolean} sound */
  async close(sound) {
    if (sound && !this.failed) await this.writer.close().catch((e) => { this.failed ??= e; });
    else await this.writer.abort().catch(() => {});
    await this.put;
    if (sound && this.failed) {
      const e = /** @type {Error} */ (this.failed);
      notKept(this.where, e?.name === 'QuotaExceededError' ? 'the browser\'s storage quota is full (navigator.storage.estimate())' : String(e?.message ?? e));
    }
  }
}

/**
 * `name` inside the folder or URL `base`.
 * @param {URL | string} base
 * @param {string} name
 * @returns {Promise<URL | string>}
 */
export async function within(base, name) {
  const text = String(base);
  if (base instanceof URL || isUrl(text)) return new URL(name, text.endsWith('/') ? text : `${text}/`);
  if (isNode) return (await import('node:path')).join(text, name);
  return `${text.replace(/\/$/, '')}/${name}`;
}

/** @param {string} s */
function isUrl(s) {
  return /^[a-z][a-z0-9+.-]*:/i.test(s) && !/^[a-z]:[\\/]/i.test(s); // not a Windows drive path
}
