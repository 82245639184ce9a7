// A consumer of the published package in strict TypeScript: type-checked against the package's .d.ts,
// then compiled and run (consumer/run.js). Every use below must type-check; every @ts-expect-error line
// is something the public types must refuse.
//   node out/main.js GOLDEN_DIR

import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import {
  type ChatCompletion, type ChatCompletionChunk, type Dim, type HostTensor, type InputInfo, type LoadOptions,
  type Outputs, ArtifactError, DeviceTensor, InputError, Program, type TextBatch, type Tokenizer, WebGPUTorchError,
  createChat, load, loadTokenizer,
} from '@webgpu-torch/runtime';

function check(ok: boolean, what: string): asserts ok {
  if (!ok) throw new Error(what);
}

const golden: string = process.argv[2];
const call = JSON.parse(readFileSync(join(golden, 'mlp.json'), 'utf8')).calls[0] as { args: { data: string }[] };
const x = new Float32Array(Uint8Array.from(Buffer.from(call.args[0].data, 'base64')).buffer);

const options: LoadOptions = { tune: false, cache: false, timeoutMs: 60_000 };
const program: Program = await load(join(golden, 'mlp.wgpt'), options);
const inputs: ReadonlyArray<InputInfo> = program.inputs;
const first: Dim = inputs[0].shape[0];
check(first === 5 && inputs[0].dtype === 'float32', 'input info');

// The default result type is the precise union; a caller that knows the model's structure says so.
const any: Outputs = await program.run([x]);
check(!Array.isArray(any) && any !== null && typeof any === 'object', 'one tensor');
const y = await program.run<HostTensor<'float32'>>({ input: x });
const data: Float32Array = y.data;
check(data.length === 15 && y.shape.join() === '5,3' && y.dtype === 'float32', 'output');

const kept = await program.runOnDevice<DeviceTensor>([x]);
const back: HostTensor = await kept.read();
check(back.shape.length === 2, 'read back');
kept.release();

try {
  await program.run([new Float32Array(3)]);
  check(false, 'a wrong shape must be refused');
} catch (e) {
  check(e instanceof InputError && e instanceof WebGPUTorchError && !(e instanceof ArtifactError), 'InputError');
}

// A tokenizer's batch goes to a call by name (type-checked only: no tokenizer files here).
async function tokenized(p: Program, folder: string): Promise<Float32Array> {
  const tokenizer: Tokenizer = await loadTokenizer(folder);
  const batch: TextBatch = tokenizer.batch(['a sentence'], { maxLength: 128 });
  const ids: BigInt64Array = batch.input_ids.data;
  void ids;
  return (await p.run<HostTensor<'float32'>>(batch)).data;
}
void tokenized;

// A chat's completion is one object, or with stream: true chunks to iterate (type-checked only).
async function chatted(folder: string): Promise<string> {
  const chat = await createChat(folder, { tune: false });
  const messages = [{ role: 'user', content: 'Hello!' }];
  const reply: ChatCompletion = await chat.completions({ messages, temperature: 0, max_tokens: 8 });
  let text = '';
  for await (const chunk of await chat.completions({ messages, stream: true, signal: AbortSignal.timeout(1000) })) {
    const c: ChatCompletionChunk = chunk;
    text += c.choices[0]?.delta.content ?? '';
  }
  return `${reply.choices[0].message.content}${text}`;
}
void chatted;

// What the public types refuse (never run: each line only has to fail to type-check).
function refusedByTheTypes(p: Program, out: Outputs) {
  // @ts-expect-error the executor is internal
  void p.executor;
  // @ts-expect-error programs come from load()
  void new Program();
  // @ts-expect-error outputs are not known to be tensors without saying so
  void out.data;
  // @ts-expect-error an unknown option
  void load('x.wgpt', { tunning: false });
  // @ts-expect-error a streamed completion is not one object
  void createChat('x').then(async (chat) => (await chat.completions({ messages: [], stream: true })).choices);
  // @ts-expect-error a dtype the runtime does not have
  void DeviceTensor.fromGpuBuffer({} as GPUBuffer, { device: p.device, dtype: 'float64', shape: [1] });
}
void refusedByTheTypes;

program.destroy();
console.log('typescript consumer: ok');
