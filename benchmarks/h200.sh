#!/usr/bin/env bash
# The H200 runs behind docs/benchmarks.md, as calls of the device tool from the project root:
#   run(command="source .device/enter.sh && bash benchmarks/h200.sh [STAGE ...]", carry=[".device"])
# (../shared/device/prepare onnxruntime-webgpu==1.27.0 flatbuffers fills .device/ first.) With no STAGE, all.
# Each stage has its own time limit, so one slow stage cannot take the rest with it; logs go to $OUT.
set -u
# Benchmarks report what full tuning reaches: every candidate of every group timed, whatever it takes.
export WEBGPU_TORCH_TUNE_BUDGET=${WEBGPU_TORCH_TUNE_BUDGET:-600} WEBGPU_TORCH_TUNE_TOP=${WEBGPU_TORCH_TUNE_TOP:-0}
out=${OUT:-/tmp/h200}
mkdir -p "$out"
cli="python3 -m webgpu_torch.tools.cli"
quiet() { grep -v -i -E "warn|onnx\]|W12|cls.__new__|Evaluation failed|Loading weights"; }
stage() {  # stage NAME SECONDS COMMAND...
  local name=$1 limit=$2; shift 2
  echo "=== $name"
  timeout "$limit" "$@" 2>&1 | quiet | tee "$out/$name.txt"
}
tests() {
  stage tests 240 python3 -m pytest -q -p no:cacheprovider tests/test_ops.py tests/test_dynamic.py tests/test_florence2.py \
    tests/test_e2e.py tests/test_gemm_configs.py tests/test_fusion.py tests/test_weights_f16.py \
    tests/test_attention_configs.py \
    -k "gemm or conv or attention or dynamic or florence or e2e or device or layer_norm or softmax or reduce"
}
gemm() {
  stage gemm 90 $cli bench gemm --sizes 256x256x256 512x512x512 1024x1024x1024 2048x2048x2048 \
    4096x4096x4096 --variants pr auto --ort --json "$out/gemm.json"
}
linear() {
  stage linear 60 $cli bench gemm --linear --variants pr auto --sizes 1x768x768 1x3072x768 1x768x3072 \
    8x3072x768 8x768x3072 128x3072x768 128x768x3072 593x3072x768 593x768x3072 593x768x768 1x51289x768 \
    593x51289x768 --json "$out/linear.json"
}
tiles() {  # forced tile configurations on the vision tower's stage-3 Linear shapes, a BART one and 4096³
  stage tiles 150 $cli bench gemm --linear --variants vec4_128x128 vec4_64x64 vec4_32x64 vec4_32x64_k16 \
    vec4_64x64_k16 auto --sizes 2304x1536x512 2304x512x512 2304x2048x512 2304x512x2048 593x3072x768 4096x4096x4096
}
gemm_wgpu() {
  stage gemm_wgpu 60 env WEBGPU_TORCH_ENGINE=wgpu $cli bench gemm --sizes 256x256x256 1024x1024x1024 \
    2048x2048x2048 4096x4096x4096 --variants pr auto --json "$out/gemm_wgpu.json"
}
f16() {  # weights="float16" against float32, on both engines (Dawn has shader-f16 with the engine's toggle)
  for e in dawn wgpu; do
    for w in float32 float16; do
      stage "f16_${e}_$w" 90 env WEBGPU_TORCH_ENGINE=$e $cli bench gemm --linear --variants auto --weights $w \
        --sizes 1x768x768 1x3072x768 1x768x3072 8x3072x768 128x3072x768 593x768x3072 593x3072x768 1x51289x768 \
        4096x4096x4096
    done
  done
}
matrix() {  # the matrix-unit kernels: checks and 4096³ vs cuBLAS, precision="float16" on GEMMs, models, Florence-2
  stage matrix_units 150 python3 benchmarks/matrix_units.py "$out/matrix_units.json"
  stage matrix_units_unchecked 90 env WEBGPU_TORCH_DAWN_TOGGLES=disable_robustness \
    python3 benchmarks/matrix_units.py "$out/matrix_units_unchecked.json" --no-checks
  stage linear_f16 60 $cli bench gemm --linear --variants auto --error --precision float16 \
    --sizes 4096x4096x4096 593x3072x768 593x768x3072 128x3072x768 --json "$out/linear_f16.json"
  stage models_f16 150 $cli bench models --precision float16 --models vit_b16 resnet50 florence2_vision \
    --json "$out/models_f16.json"
  stage florence2_f16 150 $cli florence2 --size base --seeds 0 1 --precision float16
}
half() {  # float16 activations (precision="float16") against float32 in one run; float16 and bfloat16 models
  stage models_half 240 $cli bench models --precision float32 float16 --models minilm vit_b16 florence2_vision \
    --json "$out/models_half.json"
  for d in float16 bfloat16; do
    stage "models_$d" 240 $cli bench models --dtype $d --precision float32 float16 --models minilm vit_b16 \
      --json "$out/models_$d.json"
  done
}
quantized() {  # packed int4/int8 weights: decode-shape GEMVs against float32, Florence-2-base int4 against float32
  for w in int4 int8; do
    stage "linear_$w" 90 $cli bench gemm --linear --weights $w --json "$out/linear_$w.json"
  done
  stage linear_int4_prefill 90 $cli bench gemm --linear --weights int4 --sizes 8x3072x768 128x3072x768 \
    593x3072x768 593x768x3072 --json "$out/linear_int4_prefill.json"
  stage florence2_int4 300 $cli florence2 --size base --seeds 0 1 --quantize int4 --group-size 32 --weights float16
}
conv() { stage conv 90 $cli bench conv; }
rows() { stage rows 60 $cli bench rows; }
attention() { stage attention 120 $cli bench attention --json "$out/attention.json"; }
host() { stage host 30 $cli bench host --dispatches 100 1000; }
transfer() { stage transfer 300 $cli bench transfer --json "$out/transfer.json"; }
florence2() { stage florence2 150 $cli florence2 --size base --seeds 0 1 --save /tmp/florence2; }
decode() {  # issue 25.1: wall per token against the step's GPU time, host per step; Python, then Node if present
  stage decode_florence2 300 $cli florence2 --size base --seeds 0 1
  stage decode_llama 300 $cli llama --size base --seeds 0 1 --new-tokens 64 --save /tmp/llama
  if command -v node > /dev/null; then stage decode_llama_node 300 node js/bench/bench.js --calls 8 /tmp/llama; fi
  stage decode_attention 120 $cli bench attention --json "$out/attention.json"
}
profile() { stage profile 60 $cli bench profile --file /tmp/florence2/decoder.wgpt --top 15; }
model_profile() {
  for m in florence2_vision resnet50 vit_b16; do
    stage "profile_$m" 120 $cli bench profile --model $m --top 1000 --json "$out/profile_$m.json"
  done
}
models() { stage models 240 $cli bench models --ort --repeat 5 --models resnet50 mobilenet_v2 vit_b16 \
  florence2_vision; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$out/gpu.txt"
for s in "${@:-tests gemm linear gemm_wgpu f16 matrix half quantized conv attention host florence2 profile models decode}"; do
  for name in $s; do "$name"; done
done
