"""Every compile option, typed, in one place: `compile(ep, **options)` parses them into one frozen `Options`
before the frontend runs, and the passes and lowering read that (`ctx.options` in an op's lowering).

The options of the compiler as a whole are fields here. An op family's kernel choice (`gemm="pr"`,
`conv="direct"`, `attention="16x4"`, `scatter=...`, `norm_chunks=...`: one kernel forced everywhere, for tests and
benchmarks) is declared beside the kernels it picks among (`ops.register_option`), checked here against the
registry, and read with `CHOICE.of(ctx.options)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

DEFAULT_MAX_BINDING = 128 * 2**20  # WebGPU's default maxStorageBufferBindingSize: every adapter binds this much
MIN_MAX_BINDING = 2**16
WEIGHTS = {"float32": 32, "float16": 16, "int8": 8, "int4": 4}  # weights= -> bits per stored weight
GROUP_SIZES = (32, 16, 64, 128, 256)  # group_size= choices (int4), the first the default
PRECISIONS = ("float32", "float16")


@dataclass(frozen=True)
class WeightFormat:
    """How the compiler stores a float32 constant that a GEMM kernel reads as its B operand (Linear, mm/addmm and
    the GEMM-shaped convolutions' weights) and an embedding table: as it is (32 bits); in float16 (16: float32
    products, a float32 copy made at load on adapters without shader-f16); or quantized round to nearest,
    symmetric, and packed (8 and 4: packing.quantize), where the kernels decode it in registers — int8 per output
    channel, int4 in groups of `group` along K. A weight is then within max|w over its group| / (2^bits − 2) of
    the float one (docs/design.md, "Quantized weights")."""

    bits: int = 32
    group: int = GROUP_SIZES[0]  # int4's group along K (int8 quantizes whole rows)

    @property
    def packed(self) -> bool:
        return self.bits <= 8

    def group_along(self, k: int) -> int:
        """The quantization group of a weight whose rows hold `k` elements."""
        return k if self.bits == 8 else self.group


@dataclass(frozen=True)
class Options:
    # No dispatch binds a larger buffer: larger constants read by linear or embedding are split into row chunks
    # under it, any other tensor over it is refused at compile time. The default binds on every adapter.
    max_binding: int = DEFAULT_MAX_BINDING
    # Outputs that are strided views (a transpose) get a copy of their own, so that kept on the device
    # (Session.on_device) they can be passed to other programs as inputs.
    contiguous_outputs: bool = False
    weights: WeightFormat = WeightFormat()
    # "float16": the activations passing between kernels that take them (elementwise, norms, softmax, GEMMs,
    # attention) are stored as float16 where the device has shader-f16 (float32 arithmetic; passes/half_storage.py),
    # and GEMMs and channels-last convs may multiply float16 operands on the GPU's matrix units (float32 sums).
    precision: str = PRECISIONS[0]
    # The op families' kernel choices that were given, by option name (ops.register_option).
    kernels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def half_activations(self) -> bool:
        return self.precision == "float16"


def parse(max_binding_size: int = DEFAULT_MAX_BINDING, contiguous_outputs: bool = False, weights: str = "float32",
          group_size: int = GROUP_SIZES[0], precision: str = PRECISIONS[0], **kernels: Any) -> Options:
    """`compile`'s keyword arguments as Options; TypeError for an unknown name, ValueError for a value out of
    its choices."""
    from .ops import OPTIONS

    if max_binding_size < MIN_MAX_BINDING:
        raise ValueError(f"max_binding_size={max_binding_size}: must be at least 64 KiB")
    _choose("weights", weights, tuple(WEIGHTS))
    _choose("group_size", group_size, GROUP_SIZES)
    _choose("precision", precision, PRECISIONS)
    for name, value in kernels.items():
        if name not in OPTIONS:
            known = sorted([*OPTIONS, "contiguous_outputs", "group_size", "max_binding_size", "precision", "weights"])
            raise TypeError(f"compile() got an unknown option {name!r}; options: {', '.join(known)}")
        _choose(name, value, OPTIONS[name])
    return Options(max_binding_size, bool(contiguous_outputs), WeightFormat(WEIGHTS[weights], group_size), precision,
                   MappingProxyType(dict(kernels)))


def _choose(name: str, value: Any, choices: tuple) -> None:
    if value not in choices:
        raise ValueError(f"{name}={value!r}: choose one of {', '.join(map(repr, choices))}")
