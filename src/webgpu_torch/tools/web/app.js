// The page `webgpu-torch serve` shows (serve.py says what each /config.json kind is; a CausalLM folder's chat
// is chat.js). It only loads artifacts: the JavaScript runtime (./runtime/, the repository's js/src) validates
// them, builds their pipelines and runs them on this browser's WebGPU adapter. `?featureLevel=compatibility`
// asks for a compatibility-mode adapter; `?tune=0` runs every dispatch's default kernel instead of timing the
// options first; `?repeat=N` times N calls after the first (default 5).
//
// For a test driving the page: body[data-state] goes loading → ready → running → done (or error), and
// `window.result` holds what the page last computed. While artifacts load, a progress bar under the status
// line shows the bytes read of them all (the runtime's onProgress), its value left at the end.

import { chatPage } from './chat.js';
import { halfArray, halfValues, isHalf } from './runtime/dtypes.js';
import { load, loadSeq2Seq, loadTokenizer, openDevice } from './runtime/index.js';
import { countLeaves, unflatten } from './runtime/tree.js';

const params = new URLSearchParams(location.search);
const options = {
  featureLevel: /** @type {'core' | 'compatibility'} */ (params.get('featureLevel') ?? 'core'),
  tune: params.get('tune') !== '0',
  onProgress: showProgress,
  ...(params.has('timeout') ? { timeoutMs: 1000 * Number(params.get('timeout')) } : {}), // seconds a call may take
};
const REPEAT = Number(params.get('repeat') ?? 5);
/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
/** @type {any} */ (window).result = null;

/**
 * @param {'loading' | 'ready' | 'running' | 'done' | 'error'} state
 * @param {string} text
 */
function status(state, text) {
  document.body.dataset.state = state;
  $('status').textContent = text;
  $('progress').hidden = state !== 'loading';
  if (state === 'loading') loading.clear();
}

/** @type {Map<string, import('./runtime/index.js').Progress>} the last report of each file loading, by name */
const loading = new Map();

/**
 * The progress bar: the bytes read of every file loading (a folder's programs load together), and in the
 * status line, those and the constants uploaded.
 * @param {import('./runtime/index.js').Progress} p
 */
function showProgress(p) {
  loading.set(p.source, p);
  let bytes = 0;
  let total = 0;
  let tensors = 0;
  let totalTensors = 0;
  for (const q of loading.values()) {
    bytes += q.bytes;
    total += q.totalBytes;
    tensors += q.tensors;
    totalTensors += q.totalTensors;
  }
  const bar = /** @type {HTMLProgressElement} */ ($('progress'));
  bar.max = total;
  bar.value = bytes;
  const mib = (/** @type {number} */ n) => (n / 2 ** 20).toFixed(n < 10 * 2 ** 20 ? 2 : 0);
  $('status').textContent = `loading ${[...loading.keys()].map((k) => k.replace(/^.*\//, '')).join(', ')}: ` +
    `${mib(bytes)} of ${mib(total)} MiB, ${tensors} of ${totalTensors} constants`;
}

/** @param {unknown} e */
function fail(e) {
  status('error', String(/** @type {Error} */ (e)?.message ?? e));
  console.error(e);
}

/** Rows of the timings table, by label. @param {string} label @param {string} value */
function timing(label, value) {
  const body = /** @type {HTMLTableSectionElement} */ ($('timings').querySelector('tbody'));
  let row = [...body.rows].find((r) => r.cells[0].textContent === label);
  if (!row) {
    row = body.insertRow();
    row.insertCell().textContent = label;
    row.insertCell();
  }
  row.cells[1].textContent = value;
}

const ms = (/** @type {number} */ t) => `${t < 10 ? t.toFixed(2) : t.toFixed(1)} ms`;
const median = (/** @type {number[]} */ xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/**
 * Time `f`: its result and milliseconds.
 * @template T
 * @param {() => Promise<T>} f
 * @returns {Promise<[T, number]>}
 */
async function timed(f) {
  const start = performance.now();
  const out = await f();
  return [out, performance.now() - start];
}

/** @param {GPUDevice} device */
function showAdapter(device) {
  const info = /** @type {any} */ (device).adapterInfo ?? {};
  const said = [info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(' · ');
  const rows = {
    adapter: said || '(the adapter does not say)',
    'feature level': options.featureLevel,
    features: [...device.features].sort().join(', ') || 'none',
    'storage buffers': `${device.limits.maxStorageBuffersPerShaderStage} per stage`,
    'largest binding': `${(device.limits.maxStorageBufferBindingSize / 2 ** 20).toFixed(0)} MiB`,
    browser: navigator.userAgent.match(/(Chrom(e|ium)|Firefox|Safari)\/[\d.]+/)?.[0] ?? navigator.userAgent,
  };
  $('adapter').replaceChildren(...Object.entries(rows).flatMap(([k, v]) => {
    const dt = document.createElement('dt');
    const dd = document.createElement('dd');
    dt.textContent = k;
    dd.textContent = v;
    return [dt, dd];
  }));
}

/** @param {string} id the section to show; the others hide */
function show(id) {
  for (const s of ['minilm', 'seq2seq', 'chat', 'program']) $(s).hidden = s !== id;
}

// ---- MiniLM: sentences, embeddings, their similarity as a heat map ------------------------------------

/** @param {any} config */
async function minilm(config) {
  show('minilm');
  $('batch').textContent = `${config.batch}`;
  /** @type {HTMLTextAreaElement} */ ($('sentences')).value = config.sentences.join('\n');
  const [[program, tokenizer], loadMs] = await timed(() => Promise.all([
    load(config.artifact, options),
    loadTokenizer(new URL(config.tokenizer, location.href)), // the model's tokenizer.json, through @huggingface/tokenizers
  ]));
  timing('load (fetch, validate, pipelines)', ms(loadMs));
  const button = /** @type {HTMLButtonElement} */ ($('embed'));
  const embed = async () => {
    button.disabled = true;
    status('running', 'embedding…');
    const sentences = /** @type {HTMLTextAreaElement} */ ($('sentences')).value.split('\n').map((s) => s.trim())
      .filter(Boolean).slice(0, config.batch);
    const [batch, tokenMs] = await timed(async () => tokenizer.batch(
      [...sentences, ...Array(config.batch - sentences.length).fill('')], { maxLength: config.maxLength, minLength: 2 }));
    // Rows beyond the sentences are padding: their mask is all 0 (tokenizer.batch gave them [CLS] [SEP]).
    const [rows, length] = batch.attention_mask.shape;
    const mask = batch.attention_mask.data;
    mask.fill(0n, sentences.length * length);
    const lengths = Array.from({ length: rows }, (_, i) => mask.subarray(i * length, (i + 1) * length).reduce((a, b) => a + b, 0n));
    const inputs = batch; // by name: {input_ids, attention_mask}, as the model's forward takes them
    const [out, firstMs] = await timed(() => program.run(inputs));
    const times = [];
    for (let i = 0; i < REPEAT; i++) times.push((await timed(() => program.run(inputs)))[1]);
    const width = out.shape[1];
    const similarity = sentences.map((_, i) => sentences.map((_, j) => {
      let dot = 0;
      for (let k = 0; k < width; k++) dot += out.data[i * width + k] * out.data[j * width + k];
      return dot;
    }));
    heatmap(sentences, similarity);
    timing('tokenize', ms(tokenMs));
    timing(`first call [${batch.input_ids.shape}]`, ms(firstMs));
    if (times.length) timing(`per call (median of ${times.length})`, ms(median(times)));
    /** @type {any} */ (window).result = { sentences, lengths: lengths.slice(0, sentences.length).map(Number), similarity,
      embeddings: sentences.map((_, i) => [...out.data.slice(i * width, (i + 1) * width)]), callMs: median([firstMs, ...times]) };
    status('done', `${sentences.length} sentences embedded on WebGPU`);
    button.disabled = false;
  };
  button.onclick = () => embed().catch(fail);
  status('ready', 'loaded');
  await embed();
}

/**
 * @param {string[]} labels
 * @param {number[][]} matrix values in [-1, 1]
 */
function heatmap(labels, matrix) {
  const table = /** @type {HTMLTableElement} */ ($('heatmap'));
  table.replaceChildren();
  const head = table.insertRow();
  head.appendChild(document.createElement('th'));
  labels.forEach((_, j) => { head.appendChild(document.createElement('th')).textContent = `${j + 1}`; });
  matrix.forEach((row, i) => {
    const tr = table.insertRow();
    const th = tr.appendChild(document.createElement('th'));
    th.className = 'row';
    th.textContent = `${i + 1}. ${labels[i]}`;
    row.forEach((v) => {
      const td = tr.insertCell();
      const t = Math.max(0, Math.min(1, v)); // white at 0, deep blue at 1
      td.style.background = `hsl(220 70% ${Math.round(97 - 52 * t)}%)`;
      td.style.color = t > 0.6 ? '#fff' : '#1d2330';
      td.textContent = v.toFixed(2);
    });
  });
}

// ---- Seq2Seq: an image, greedy generation token by token ---------------------------------------------

/** @param {any} config */
async function seq2seq(config) {
  show('seq2seq');
  const [model, loadMs] = await timed(() => loadSeq2Seq(new URL(config.folder, location.href), options));
  timing('load (3 programs)', ms(loadMs));
  const shape = model.vision.inputs[0].shape;
  const side = Number(config.imageSize ?? shape[shape.length - 1]);
  const canvas = /** @type {HTMLCanvasElement} */ ($('image'));
  canvas.width = canvas.height = side;
  drawDefaultImage(canvas);
  $('token-note').textContent = 'ids (no tokenizer for this random-weight model offline); time per step';
  const button = /** @type {HTMLButtonElement} */ ($('generate'));
  const generate = async () => {
    button.disabled = true;
    status('running', 'generating…');
    const list = $('tokens');
    list.replaceChildren();
    const pixels = { data: pixelValues(canvas, config.mean, config.std), shape: [1, 3, side, side] };
    const prompt = config.prompt ?? [0, 2];
    const [{ ids }, totalMs] = await timed(() => model.generate(pixels, { data: new Int32Array(prompt), shape: [1, prompt.length] }, {
      maxNewTokens: config.maxNewTokens ?? 20,
      onToken: (id, seconds) => {
        const li = list.appendChild(document.createElement('li'));
        li.innerHTML = `<b>${id}</b><span>${(seconds * 1e3).toFixed(1)} ms</span>`;
      },
    }));
    const steps = (model.timings.decoderSteps ?? []).map((s) => s * 1e3);
    timing('generate (vision, encoder, steps)', ms(totalMs));
    timing('first step (waits for vision + encoder)', ms(steps[0]));
    timing('per token after the first (median)', ms(median(steps.slice(1))));
    /** @type {any} */ (window).result = { ids, stepMs: steps, totalMs, pixels: [...pixels.data] };
    status('done', `${ids.length} tokens generated on WebGPU`);
    button.disabled = false;
  };
  button.onclick = () => generate().catch(fail);
  onDroppedImage = async (file) => {
    const bitmap = await createImageBitmap(file);
    /** @type {CanvasRenderingContext2D} */ (canvas.getContext('2d')).drawImage(bitmap, 0, 0, side, side);
    await generate();
  };
  status('ready', 'loaded');
  await generate();
}

/** A deterministic picture: a sky, a sun and a hill. @param {HTMLCanvasElement} canvas */
function drawDefaultImage(canvas) {
  const g = /** @type {CanvasRenderingContext2D} */ (canvas.getContext('2d'));
  const s = canvas.width;
  const sky = g.createLinearGradient(0, 0, 0, s);
  sky.addColorStop(0, '#5b8fd9');
  sky.addColorStop(1, '#cfe3f7');
  g.fillStyle = sky;
  g.fillRect(0, 0, s, s);
  g.fillStyle = '#f5c542';
  g.beginPath();
  g.arc(s * 0.72, s * 0.28, s * 0.12, 0, 2 * Math.PI);
  g.fill();
  g.fillStyle = '#3f8f4a';
  g.beginPath();
  g.ellipse(s * 0.35, s * 1.05, s * 0.75, s * 0.45, 0, 0, 2 * Math.PI);
  g.fill();
}

/**
 * The canvas as a [1, 3, H, W] float32 image, each channel normalised by (x - mean) / std.
 * @param {HTMLCanvasElement} canvas
 * @param {number[]} mean
 * @param {number[]} std
 */
function pixelValues(canvas, mean, std) {
  const { data, width, height } = /** @type {CanvasRenderingContext2D} */ (canvas.getContext('2d')).getImageData(0, 0, canvas.width, canvas.height);
  const plane = width * height;
  const out = new Float32Array(3 * plane);
  for (let i = 0; i < plane; i++) {
    for (let c = 0; c < 3; c++) out[c * plane + i] = (data[4 * i + c] / 255 - mean[c]) / std[c];
  }
  return out;
}

// ---- Any program: seeded random inputs, output statistics ---------------------------------------------

/** @param {import('./runtime/index.js').Program} program @param {string} name */
async function anyProgram(program, name) {
  show('program');
  $('model-name').textContent = name;
  const spec = program.spec;
  const random = seeded(0);
  const leaves = spec.inputs.map((x) => {
    const shape = x.shape.map((d) => (typeof d === 'number' ? d : spec.symbols[/** @type {string} */ (d)].hint));
    const n = shape.reduce((a, b) => a * b, 1);
    const normal = () => Float32Array.from({ length: n }, () => random.normal());
    const data = x.dtype === 'float32' ? normal() : isHalf(x.dtype) ? halfArray(normal(), x.dtype)
      : x.dtype === 'bool' ? Uint8Array.from({ length: n }, () => Math.floor(random.uniform() * 2))
        : Int32Array.from({ length: n }, () => Math.floor(random.uniform() * 100));
    return { data, shape };
  });
  rows($('inputs'), ['input', 'dtype', 'shape'], spec.inputs.map((x, i) => [x.name, x.dtype, `[${leaves[i].shape}]`]));
  const [args, kwargs] = /** @type {[unknown[], Record<string, unknown>]} */ (unflatten(spec.inputTree, leaves));
  const button = /** @type {HTMLButtonElement} */ ($('run'));
  const run = async () => {
    button.disabled = true;
    status('running', 'running…');
    const [out, firstMs] = await timed(() => program.run({ args, kwargs }));
    const times = [];
    for (let i = 0; i < REPEAT; i++) times.push((await timed(() => program.run({ args, kwargs })))[1]);
    const outputs = tensors(out);
    const values = outputs.map(([, t]) => Array.from(isHalf(t.dtype) ? halfValues(t.data, t.dtype) : t.data, Number)); // 16-bit floats: their values
    rows($('outputs'), ['output', 'dtype', 'shape', 'mean', 'std', 'first values'], outputs.map(([path, t], i) => {
      const xs = values[i];
      const mean = xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
      const std = Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, xs.length));
      return [path, t.dtype, `[${t.shape}]`, mean.toPrecision(4), std.toPrecision(4), xs.slice(0, 4).map((v) => +v.toPrecision(4)).join(', ')];
    }));
    timing('first call', ms(firstMs));
    if (times.length) timing(`per call (median of ${times.length})`, ms(median(times)));
    /** @type {any} */ (window).result = {
      outputs: outputs.map(([path, t], i) => ({ path, dtype: t.dtype, shape: t.shape, first: values[i].slice(0, 4) })),
      callMs: median([firstMs, ...times]),
    };
    const n = countLeaves(spec.outputTree);
    status('done', `${spec.dispatches.length} dispatches, ${n} output${n === 1 ? '' : 's'}`);
    button.disabled = false;
  };
  button.onclick = () => run().catch(fail);
  status('ready', 'loaded');
  await run();
}

/**
 * The tensors in a result, with their paths.
 * @param {any} value
 * @param {string} path
 * @returns {[string, {data: ArrayLike<number | bigint>, shape: number[], dtype: string}][]}
 */
function tensors(value, path = 'out') {
  if (value && ArrayBuffer.isView(value.data)) return [[path, value]];
  if (Array.isArray(value)) return value.flatMap((v, i) => tensors(v, `${path}[${i}]`));
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => tensors(v, `${path}.${k}`));
  return [];
}

/**
 * @param {HTMLElement} table
 * @param {string[]} head
 * @param {string[][]} body
 */
function rows(table, head, body) {
  table.replaceChildren();
  const tr = /** @type {HTMLTableElement} */ (table).insertRow();
  for (const h of head) tr.appendChild(document.createElement('th')).textContent = h;
  for (const r of body) {
    const row = /** @type {HTMLTableElement} */ (table).insertRow();
    for (const c of r) row.insertCell().textContent = c;
  }
}

/** mulberry32: uniform in [0, 1) and standard normal (Box–Muller). @param {number} seed */
function seeded(seed) {
  let a = seed >>> 0;
  const uniform = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const normal = () => Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
  return { uniform, normal };
}

// ---- Dropped files ------------------------------------------------------------------------------------

/** @type {((file: File) => Promise<void>) | null} what an image dropped on the page does (seq2seq) */
let onDroppedImage = null;

/** @param {File} file */
async function open(file) {
  if (file.type.startsWith('image/') && onDroppedImage) return onDroppedImage(file);
  if (!file.name.endsWith('.wgpt')) throw new Error(`${file.name}: drop a .wgpt file${onDroppedImage ? ' or an image' : ''}`);
  status('loading', `loading ${file.name}…`);
  const [program, loadMs] = await timed(() => load(file, options)); // read in pieces, never whole
  $('timings').querySelector('tbody')?.replaceChildren();
  onDroppedImage = null;
  timing('load (validate, pipelines)', ms(loadMs));
  await anyProgram(program, file.name);
}

for (const type of ['dragenter', 'dragover']) {
  window.addEventListener(type, (e) => { e.preventDefault(); document.body.classList.add('dragging'); });
}
window.addEventListener('dragleave', () => document.body.classList.remove('dragging'));
window.addEventListener('drop', (e) => {
  e.preventDefault();
  document.body.classList.remove('dragging');
  const file = e.dataTransfer?.files[0];
  if (file) open(file).catch(fail);
});
$('file').addEventListener('change', (e) => {
  const file = /** @type {HTMLInputElement} */ (e.target).files?.[0];
  if (file) open(file).catch(fail);
});

// ---- Start --------------------------------------------------------------------------------------------

async function main() {
  if (options.timeoutMs !== undefined && !(options.timeoutMs > 0)) {
    throw new Error(`?timeout=${params.get('timeout')}: give the seconds a call may take, a number above 0`);
  }
  const { device } = await openDevice(options);
  showAdapter(device);
  const config = await (await fetch('config.json')).json();
  if (config.name) $('model-name').textContent = config.name;
  status('loading', `loading ${config.name ?? ''}…`);
  if (config.kind === 'minilm') await minilm(config);
  else if (config.kind === 'seq2seq') await seq2seq(config);
  else if (config.kind === 'causal') await chatPage(config, { status, timing, show, options });
  else if (config.kind === 'program') await anyProgram(await timedLoad(config.artifact), config.name);
  else status('ready', 'drop a .wgpt file on the page');
}

/** @param {string} url */
async function timedLoad(url) {
  const [program, loadMs] = await timed(() => load(url, options));
  timing('load (fetch, validate, pipelines)', ms(loadMs));
  return program;
}

main().catch(fail);
