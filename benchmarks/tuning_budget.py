"""How long a cold load of Florence-2's decoder stage takes under the tuning budget: the stage (with its
vocabulary projection) compiled at a small image size, then loaded with an empty tuning cache and, unless
--warm-shaders, an empty Mesa shader cache (a software Vulkan driver compiles every kernel on first use).

    python benchmarks/tuning_budget.py [--size base|tiny] [--image-size 192] [--warm-shaders]

Prints the compile time, the load time and the tuning summary line (WEBGPU_TORCH_TUNE_BUDGET applies).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=["base", "tiny"], default="base")
    parser.add_argument("--image-size", type=int, default=192)
    parser.add_argument("--warm-shaders", action="store_true", help="keep Mesa's shader cache")
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp()
    os.environ["WEBGPU_TORCH_CACHE"] = os.path.join(scratch, "tuning.json")
    if not args.warm_shaders:
        os.environ["MESA_SHADER_CACHE_DIR"] = os.path.join(scratch, "mesa")  # before any driver loads

    from webgpu_torch.tools.models import florence2

    start = time.perf_counter()
    stages = florence2.compile_stages(florence2.build(args.size), args.image_size, max_prompt=16,
                                      max_new_tokens=21)
    print(f"compiled the three stages in {time.perf_counter() - start:.1f} s", flush=True)
    start = time.perf_counter()
    stages.decoder.executor(None)
    print(f"decoder stage loaded in {time.perf_counter() - start:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
