// Where we run: Node or a browser. Node-only modules are reached only through dynamic import on Node code
// paths, so the same files load in a browser unchanged.

export const isNode = typeof process !== 'undefined' && Boolean(process.versions?.node) &&
  typeof (/** @type {any} */ (globalThis).navigator?.gpu) === 'undefined';

/**
 * An environment variable on Node (undefined in a browser).
 * @param {string} name
 * @returns {string | undefined}
 */
export function envVar(name) {
  return isNode ? process.env[name] : undefined;
}
