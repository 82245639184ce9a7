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
      const code = /** @type {NodeJS.ErrnoException} */ (e).code;
      throw new ArtifactError(code === 'ENOENT' ? `${where}: no such file` : `${where}: ${/** @type {Error} */ (e).message}`);
    }
  }
  let response;
  try {
    response = await fetch(source);
  } catch (e) {
    throw new ArtifactError(`${where}: cannot fetch it: ${/** @type {Error} */ (e).message}`);
  }
  if (!response.ok) throw new ArtifactError(`${where}: HTTP ${response.status} ${response.statusText}`);
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
