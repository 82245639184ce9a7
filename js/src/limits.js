// Generated from src/webgpu_torch/format/limits.json by `python -m tests.golden.make`: edit that file, not this one.
// What both runtimes must decide alike, as data (docs/artifact.md): the format's numbers, the bounds past which a file is refused, the features a kernel may require, WebGPU's default limits (what a device that reports none allows), and tuning's settings. js/src/limits.js is generated from this file (python -m tests.golden.make); both suites check they agree.

export const LIMITS = Object.freeze({
 "magic": "WGPUTRCH",
 "container_version": 2,
 "format": 3,
 "align": 64,
 "max_header_bytes": 1073741824,
 "max_workgroups_per_dim": 65535,
 "max_workgroups": 16777216,
 "max_workgroup_invocations": 1024,
 "max_workgroup_bytes": 1048576,
 "max_source_chars": 4194304,
 "max_nesting": 64,
 "max_tree_depth": 64,
 "max_statement_tokens": 1024,
 "max_rank": 16,
 "external_file": "[A-Za-z0-9_][A-Za-z0-9._-]{0,250}\\.wgpt",
 "max_json_depth": 256,
 "max_number": 9007199254740991,
 "max_expression_depth": 32,
 "symbol_limit": 2147483648,
 "scalar_ranges": {
  "u32": [
   0,
   4294967295
  ],
  "i32": [
   -2147483648,
   2147483647
  ],
  "f32": [
   -2147483648,
   2147483647
  ]
 },
 "features": [
  "shader-f16",
  "subgroups",
  "chromium-experimental-subgroup-matrix"
 ],
 "webgpu_limits": {
  "maxStorageBufferBindingSize": 134217728,
  "maxBufferSize": 268435456,
  "maxStorageBuffersPerShaderStage": 8,
  "maxUniformBufferBindingSize": 65536,
  "maxComputeWorkgroupSizeX": 256,
  "maxComputeWorkgroupSizeY": 256,
  "maxComputeWorkgroupSizeZ": 64,
  "maxComputeInvocationsPerWorkgroup": 256,
  "maxComputeWorkgroupStorageSize": 16384
 },
 "tree_classes": {
  "dict": {
   "names": [
    "collections.OrderedDict"
   ],
   "modules": [
    "transformers",
    "transformers_modules"
   ]
  },
  "tuple": {
   "names": [],
   "modules": [
    "torch.return_types"
   ]
  }
 },
 "compile_cost": {
  "max_functions": 256,
  "max_call_depth": 32,
  "max_function_tokens": 98304,
  "max_source_tokens": 196608,
  "array_element_tokens": 32,
  "max_array_elements": 65535
 },
 "call_timeout": {
  "seconds": 60,
  "first_call_seconds_per_token": 0.0001
 },
 "tuning": {
  "repeats": 8,
  "span_seconds": 0.002,
  "samples": 3,
  "slower": 4,
  "groups_per_probe": 8,
  "top": {
   "cpu": 4,
   "gpu": 0
  },
  "budget_seconds": 5,
  "cache_version": 2
 }
});
