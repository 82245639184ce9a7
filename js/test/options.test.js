// The cross product in Node (tests/test_cross_product.py writes its programs to the model corpus's options/
// folder): in a sample of them — every program over float32, float16 activations and packed int4 with zero
// points, and the GEMMs over every other storage — each candidate of each group that this device runs must
// compute what the group's default computes, by the tuner's own check (src/tuning.js's Candidate).

import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { load } from '../src/session.js';
import { runsOn } from '../src/fit.js';
import { Candidate, candidates, groups } from '../src/tuning.js';
import { CORPUS } from '../testkit/io.js';

const FOLDER = join(CORPUS, 'options');
const WHOLE = ['float32-', 'float16_activations-', 'torchao_int4_group32_zero_points-']; // every program of these
const GEMMS = ['-linear.wgpt', '-linear_rows.wgpt', '-linear_split_k.wgpt'];
const SAMPLE = existsSync(FOLDER)
  ? readdirSync(FOLDER).filter((f) => WHOLE.some((s) => f.startsWith(s)) || GEMMS.some((g) => f.endsWith(g))).sort()
  : [];

test('the cross product\'s programs are there', () => {
  assert.ok(SAMPLE.length, `no programs in ${FOLDER}: write them with \`.venv/bin/python -m pytest tests/test_cross_product.py\``);
});

for (const file of SAMPLE) {
  test(`cross product ${file}: every candidate computes what its default computes`, async () => {
    // Untuned, a program keeps its options; its buffers hold the constants a candidate's probe binds.
    const program = await load(join(FOLDER, file), { tune: false });
    const { spec, executor: { gpu, buffers } } = program;
    const features = new Set(gpu.device.features);
    let checked = 0;
    for (const members of groups(spec)) {
      const reference = await Candidate.create(spec, gpu, members, 0, buffers);
      try {
        for (let c = 1; c <= spec.dispatches[members[0]].options.length; c++) {
          const kernels = members.map((i) => spec.kernels[candidates(spec.dispatches[i])[c].kernel]);
          if (!kernels.every((k) => runsOn(k, features, gpu.device.limits))) continue;
          const candidate = await Candidate.create(spec, gpu, members, c, buffers, reference); // as tuning does
          try {
            assert.equal(candidate.differsFrom(reference), null, kernels[0].name);
          } finally {
            candidate.executor.destroy();
          }
          checked++;
        }
      } finally {
        reference.executor.destroy();
      }
    }
    program.destroy();
    assert.ok(checked > 0, 'no candidate ran');
  });
}
