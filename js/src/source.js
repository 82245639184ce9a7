// The bytes of an artifact or a JSON file: given as bytes, fetched from a URL, or read from a file (Node).

import { ArtifactError } from './errors.js';
import { isNode } from './env.js';

/** @typedef {ArrayBuffer | ArrayBufferView | URL | string} Source */

/**
 * The bytes of `source` and a name for it in messages.
 * @param {Source} source
 * @returns {Promise<{bytes: Uint8Array, where: string}>}
 */
export async function readSource(source) {
  const read = await readOrMissing(source);
  if ('missing' in read) throw new ArtifactError(read.missing);
  return read;
}

/**
 * The bytes of `source` as readSource gives them, or null where there is no such file (a path that is not
 * there, an HTTP 404): a model folder's optional files.
 * @param {Source} source
 * @returns {Promise<{bytes: Uint8Array, where: string} | null>}
 */
export async function readIfThere(source) {
  const read = await readOrMissing(source);
  return 'missing' in read ? null : read;
}

/**
 * The bytes of `source`, or why there is no such file; ArtifactError where it cannot be read otherwise.
 * @param {Source} source
 * @returns {Promise<{bytes: Uint8Array, where: string} | {missing: string}>}
 */
async function readOrMissing(source) {
  if (source instanceof ArrayBuffer) return { bytes: new Uint8Array(source), where: '<bytes>' };
  if (ArrayBuffer.isView(source)) {
    return { bytes: new Uint8Array(source.buffer, source.byteOffset, source.byteLength), where: '<bytes>' };
  }
  const where = String(source);
  if (isNode && (!isUrl(where) || where.startsWith('file:'))) {
    const { readFile } = await import('node:fs/promises');
    try {
      const buffer = await readFile(source instanceof URL || where.startsWith('file:') ? new URL(where) : where);
      return { bytes: new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength), where };
    } catch (e) {
      if (/** @type {NodeJS.ErrnoException} */ (e).code === 'ENOENT') return { missing: `${where}: no such file` };
      throw new ArtifactError(`${where}: ${/** @type {Error} */ (e).message}`);
    }
  }
  let response;
  try {
    response = await fetch(source);
  } catch (e) {
    throw new ArtifactError(`${where}: cannot fetch it: ${/** @type {Error} */ (e).message}`);
  }
  const status = `${where}: HTTP ${response.status} ${response.statusText}`;
  if (response.status === 404) return { missing: status };
  if (!response.ok) throw new ArtifactError(status);
  return { bytes: new Uint8Array(await response.arrayBuffer()), where };
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
