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
set -euo pipefail
case ${1:-} in
prepare)
  mkdir -p .device/js/webgpu
  xz -T0 -c "$(command -v node)" > .device/js/node.xz
  cp js/node_modules/webgpu/index.js js/node_modules/webgpu/package.json .device/js/webgpu/
  xz -T0 -c js/node_modules/webgpu/dist/linux-x64/dawn.node > .device/js/dawn.node.xz
  du -sh .device/js ;;
run)
  shift
  unxz() { python3 -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'))" "$@"; }
  unxz .device/js/node.xz /tmp/node && chmod +x /tmp/node
  mkdir -p js/node_modules/webgpu/dist/linux-x64
  cp .device/js/webgpu/* js/node_modules/webgpu/
  unxz .device/js/dawn.node.xz js/node_modules/webgpu/dist/linux-x64/dawn.node
  export WEBGPU_TORCH_TUNE=0
  calls=${CALLS:-200}
  for round in 1 2; do
    echo "=== round $round"
    python3 js/bench/python_calls.py "$calls" "$@" 2>&1 | grep -v Warning
    /tmp/node js/bench/bench.js --calls "$calls" "$@" 2>&1 | grep -v Warning
  done ;;
*)
  echo "usage: bash js/bench/device.sh prepare | run ARTIFACT ..." >&2
  exit 2 ;;
esac
