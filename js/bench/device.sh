#!/usr/bin/env bash
# The JavaScript runtime against the Python one, call for call, on the H200 machine (which has no Node and no
# package registry). From the repository root:
#   bash js/bench/device.sh prepare      here, after npm install in js/: Node and Dawn for Node, compressed,
#                                        into .device/js/ (next to what ../shared/device/prepare puts there)
#   run(command="source .device/enter.sh && bash js/bench/device.sh run ARTIFACT ...",
#       carry=[".device", <the artifacts' folders>])
# An ARTIFACT is NAME.wgpt beside NAME.json (tests/golden/README.md) or a Seq2Seq folder with generate.json.
# Both runtimes run every dispatch's default (no tuning), in two interleaved rounds; CALLS (default 200)
# calls each.
#
# Ours against onnxruntime-web's WebGPU EP (side_by_side_node.js), on the H200 machine's Dawn, in two runs
# made back to back (the machine keeps build/ between calls while it is warm):
#   bash js/bench/device.sh prepare      here, also after npm ci in js/bench/ort: ORT's WebGPU build too
#   ../shared/device/prepare onnx==1.23.2 onnxscript==0.7.2 onnx-ir==1.1.0 ml-dtypes==0.7.0 protobuf==7.36.2
#   run(command="source .device/enter.sh && python3 -m webgpu_torch.tools.cli bench browser --prepare-only
#       --folder build/side-by-side --models minilm mobilenet_v2 vit_b16 florence2_decoder florence2_base_decoder",
#       carry=[".device"])        (compiles ours and exports the ONNX there: big models do not travel)
#   (with --quantize int4 the decoders also run with 4-bit weights, ORT's as MatMulNBits: the prepare line
#   above then also needs onnxruntime and torchao==0.18.0)
#   run(command="bash js/bench/device.sh side-by-side build/side-by-side", carry=[".device/js"])
#
# Ours against llama.cpp's Vulkan backend (bench llm), there:
#   bash js/bench/device.sh prepare      here, also after NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm install
#                                        --ignore-scripts --no-save in js/bench/llama-cpp: its packages with
#                                        only the prebuilt Linux x64 Vulkan binary (13 MB compressed)
#   ../shared/device/prepare gguf==0.19.0
#   run(command="source .device/enter.sh && bash js/bench/device.sh llm --arch llama-3.2-1b ...",
#       carry=[".device"])        (the arguments are bench llm's; --node runs ours in Node too)
# With --ort (onnxruntime-web too) one carry cannot hold both Node's sides and the ONNX exporter's wheels, so
# two calls made back to back on the warm machine (which keeps build/): the first, with the wheels of the
# side-by-side's prepare line plus onnxruntime (its quantizer) in .device/whl and without .device/js, runs
#   python3 -m webgpu_torch.tools.cli bench llm --prepare-only --ort ARGS     (the exports, into build/bench-llm)
# and the second, with .device/js (ORT's WebGPU build from prepare included) and without those wheels,
#   bash js/bench/device.sh llm --ort ARGS                                    (reuses the exports)
set -euo pipefail
unxz() { python3 -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'))" "$@"; }
unpack() {  # Node to /tmp/node, Dawn for Node into js/node_modules/webgpu
  unxz .device/js/node.xz /tmp/node && chmod +x /tmp/node
  mkdir -p js/node_modules/webgpu/dist/linux-x64
  cp .device/js/webgpu/* js/node_modules/webgpu/
  if [ -f .device/js/dawn.node.xz ]; then  # bench llm without --node carries none
    unxz .device/js/dawn.node.xz js/node_modules/webgpu/dist/linux-x64/dawn.node
  fi
}
case ${1:-} in
prepare)
  mkdir -p .device/js/webgpu
  xz -T0 -c "$(command -v node)" > .device/js/node.xz
  cp js/node_modules/webgpu/index.js js/node_modules/webgpu/package.json .device/js/webgpu/
  xz -T0 -c js/node_modules/webgpu/dist/linux-x64/dawn.node > .device/js/dawn.node.xz
  dist=js/bench/ort/node_modules/onnxruntime-web/dist
  if [ -d "$dist" ]; then
    mkdir -p .device/js/ort
    cp "$dist/ort.webgpu.min.mjs" "$dist/ort-wasm-simd-threaded.asyncify.mjs" .device/js/ort/
    xz -T0 -c "$dist/ort-wasm-simd-threaded.asyncify.wasm" > .device/js/ort/ort-wasm-simd-threaded.asyncify.wasm.xz
  fi
  llama=js/bench/llama-cpp/node_modules
  if [ -d "$llama/node-llama-cpp" ]; then  # other platforms' binaries and the source bundle stay behind
    tar -C js/bench/llama-cpp -cf - --exclude='node_modules/@node-llama-cpp/linux-x64-cuda*' \
      --exclude='node_modules/@node-llama-cpp/linux-arm*' --exclude='node_modules/@node-llama-cpp/linux-x64' \
      --exclude='node_modules/node-llama-cpp/llama/gitRelease.bundle' node_modules | xz -T0 > .device/js/llama-cpp.tar.xz
  fi
  du -sh .device/js ;;
side-by-side)
  unpack
  mkdir -p /tmp/ort
  cp .device/js/ort/*.mjs /tmp/ort/
  unxz .device/js/ort/ort-wasm-simd-threaded.asyncify.wasm.xz /tmp/ort/ort-wasm-simd-threaded.asyncify.wasm
  for round in 1 2; do
    echo "=== round $round"
    /tmp/node js/bench/side_by_side_node.js "${2:?the folder bench browser --prepare-only wrote}" --ort /tmp/ort \
      --calls "${CALLS:-20}" 2>&1 | grep -v Warning
  done ;;
llm)
  shift
  unpack
  mkdir -p /tmp/bin && ln -sf /tmp/node /tmp/bin/node
  python3 -c "import lzma, sys, tarfile; tarfile.open(fileobj=lzma.open(sys.argv[1])).extractall(sys.argv[2])" \
    .device/js/llama-cpp.tar.xz js/bench/llama-cpp
  if [ -d .device/js/ort ]; then  # --ort: ORT's WebGPU build where llm_ort.js looks for it
    dist=js/bench/ort/node_modules/onnxruntime-web/dist
    mkdir -p $dist && cp .device/js/ort/*.mjs $dist/
    unxz .device/js/ort/ort-wasm-simd-threaded.asyncify.wasm.xz $dist/ort-wasm-simd-threaded.asyncify.wasm
  fi
  PATH=/tmp/bin:$PATH python3 -m webgpu_torch.tools.cli bench llm "$@" 2>&1 | grep -v Warning ;;
run)
  shift
  unpack
  export WEBGPU_TORCH_TUNE=0
  calls=${CALLS:-200}
  for round in 1 2; do
    echo "=== round $round"
    python3 js/bench/python_calls.py "$calls" "$@" 2>&1 | grep -v Warning
    /tmp/node js/bench/bench.js --calls "$calls" "$@" 2>&1 | grep -v Warning
  done ;;
*)
  echo "usage: bash js/bench/device.sh prepare | run ARTIFACT ... | side-by-side FOLDER | llm BENCH_LLM_ARGS" >&2
  exit 2 ;;
esac
