// CRC-32 as zlib computes it: IEEE polynomial, reflected (0xEDB88320), initial and final XOR 0xFFFFFFFF.
// Slicing by 4 (four tables) keeps a large artifact's data check well under its read time.

/** @type {Uint32Array | null} */
let tables = null;

function makeTables() {
  const t = new Uint32Array(4 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  for (let n = 0; n < 256; n++) {
    for (let s = 1; s < 4; s++) t[s * 256 + n] = (t[(s - 1) * 256 + n] >>> 8) ^ t[t[(s - 1) * 256 + n] & 0xff];
  }
  return t;
}

/**
 * The CRC-32 of `bytes`, as an unsigned 32-bit number; given the CRC-32 of the bytes before them (`crc`), that
 * of the whole, as zlib's crc32(bytes, crc): a stream's CRC is its pieces' folded in order.
 * @param {Uint8Array} bytes
 * @param {number} [crc] the CRC-32 of what came before (0: nothing)
 * @returns {number}
 */
export function crc32(bytes, crc = 0) {
  const t = (tables ??= makeTables());
  let c = ~crc;
  let i = 0;
  const n = bytes.length;
  for (; i + 4 <= n; i += 4) {
    c ^= bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24);
    c = t[768 + (c & 0xff)] ^ t[512 + ((c >>> 8) & 0xff)] ^ t[256 + ((c >>> 16) & 0xff)] ^ t[c >>> 24];
  }
  for (; i < n; i++) c = t[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
