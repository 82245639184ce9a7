"""Every rule of docs/artifact.md as a damaged file: each case copies one golden artifact, breaks it in one way
(the header edited, every checksum recomputed, unless the container itself is the damage) and names a phrase
that the ArtifactError both runtimes raise must contain. `make.py` writes them to bad/ with bad/expected.json.

A new validation rule gets its case here: one entry, `name: (file bytes, phrase)`.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Callable

from webgpu_torch.format import artifact

_DELETE = object()


def parts(raw: bytes) -> tuple[dict, bytes]:
    _, _, _, hlen, _ = artifact.PREAMBLE.unpack_from(raw)
    return json.loads(raw[32:32 + hlen]), raw[32 + hlen:]


def pack(header, data: bytes, version: int = artifact.CONTAINER_VERSION, pad: bool = True) -> bytes:
    """A container around `header` (any JSON value, or raw bytes) and `data`, with correct lengths and CRCs."""
    text = header if isinstance(header, bytes) else json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 64)
    return artifact.PREAMBLE.pack(artifact.MAGIC, version, zlib.crc32(text), len(text), len(data)) + text + data


def edit(raw: bytes, *changes: Callable[[dict], None]) -> bytes:
    header, data = parts(raw)
    for change in changes:
        change(header)
    return pack(header, data)


def at(path: str, value) -> Callable[[dict], None]:
    """An edit setting header[path] (dot-separated keys and indices) to `value` (or deleting it: _DELETE)."""
    *head, last = [int(k) if k.lstrip("-").isdigit() else k for k in path.split(".")]

    def change(h):
        for k in head:
            h = h[k]
        if value is _DELETE:
            del h[last]
        else:
            h[last] = value

    return change


def cases(files: dict[str, bytes]) -> dict[str, tuple[bytes, str]]:
    """name -> (file bytes, phrase); `files` maps golden names (tiny, dynamic, structured, options,
    weights_f16, state, bfloat16, weights_int4) to their bytes."""
    return {**_container(files["tiny"]), **_fields(files["tiny"]), **_kernels(files["tiny"], files["weights_f16"]),
            **_dynamic(files["dynamic"]), **_structured(files["structured"]), **_groups(files["options"]),
            **_hostile(files["tiny"], files["dynamic"]), **_states(files["state"]), **_bfloat16(files["bfloat16"]),
            **_packed(files["weights_int4"]), **_compile_cost(files["tiny"]), **_classes(files["tiny"]),
            **_external(files["tiny"])}


def _external(raw: bytes) -> dict:
    """A constant whose bytes another file of the folder holds (docs/artifact.md, Shared constants), named
    wrongly. (One named rightly is refused where the program it needs is not given: a runtime's own tests.)"""

    def external(file, crc=0, keep_offset=False) -> Callable[[dict], None]:
        def change(h):
            h["tensors"][0]["external"] = {"file": file, "data_crc32": crc}
            if not keep_offset:
                del h["tensors"][0]["offset"]
        return change

    return {
        "external_path": (edit(raw, external("../tiny.wgpt")), "is not a .wgpt file name of this folder"),
        "external_hidden": (edit(raw, external(".step.wgpt")), "is not a .wgpt file name of this folder"),
        "external_and_offset": (edit(raw, external("step.wgpt", keep_offset=True)),
                                "needs exactly one of offset and external"),
        "external_crc": (edit(raw, external("step.wgpt", crc=-1)), "external data_crc32 is not a CRC-32"),
    }


def _states(raw: bytes) -> dict:
    header, _ = parts(raw)
    scratch = next(i for i, b in enumerate(header["buffers"]) if b["role"] == "scratch")
    state = header["states"][0]["buffer"]
    return {
        "state_buffer": (edit(raw, at("states.0.buffer", 0)), "is not a state buffer"),
        "state_unlisted": (edit(raw, lambda h: h["states"].pop()), "not exactly one state's"),
        "state_twice": (edit(raw, lambda h: h["states"].append({**h["states"][0], "name": "again"})),
                        "not exactly one state's"),
        "state_shape": (edit(raw, at("states.0.shape.0", 10**6)), "bad shape or buffer too small"),
        "state_role_scratch": (edit(raw, at(f"buffers.{scratch}.role", "state")), "not exactly one state's"),
        "state_output": (edit(raw, lambda h: h["outputs"][0].update(buffer=state)), "an output views a state buffer"),
        "state_rank": (edit(raw, lambda h: h["states"][0].update(shape=[1] * 17)), "17 dimensions, over 16"),
    }


def _bfloat16(raw: bytes) -> dict:
    """A bf16 constant is 2 bytes an element (docs/artifact.md, 16-bit constants)."""
    tensor = next(i for i, t in enumerate(parts(raw)[0]["tensors"]) if t["dtype"] == "bf16")

    def four_bytes_an_element(h):  # its bytes counted as if each element were a 32-bit word
        t = h["tensors"][tensor]
        t["shape"] = [t["shape"][0], t["shape"][1] // 2]

    return {"bf16_size": (edit(raw, four_bytes_an_element), "mis-sized or out of bounds")}


def _container(raw: bytes) -> dict:
    header, data = parts(raw)
    flip_header, flip_data = bytearray(raw), bytearray(raw)
    flip_header[40] ^= 0x01
    flip_data[-70] ^= 0x01
    text = json.dumps(header, separators=(",", ":"))
    return {
        "magic": (b"PK\x03\x04" + raw[4:], "not a webgpu_torch program"),
        "empty": (b"", "not a webgpu_torch program"),
        "short": (raw[:10], "truncated"),
        "truncated": (raw[:-100], "truncated"),
        "trailing": (raw + b"\0", "trailing bytes"),
        "container_version": (raw[:8] + struct.pack("<I", 7) + raw[12:], "container version 7"),
        "header_checksum": (bytes(flip_header), "header is damaged"),
        "data_checksum": (bytes(flip_data), "tensor data is damaged"),
        "header_unaligned": (pack(text.encode() + b" ", data, pad=False), "is not a multiple of 64"),
        "not_json": (pack(b"{not json", data), "damaged header"),
        "nan_literal": (pack(text.replace('"data_crc32"', '"x":NaN,"data_crc32"', 1).encode(), data),
                        "damaged header"),
        "header_list": (pack([1, 2, 3], data), "not an object"),
        "deep_nesting": (pack(b"[" * 20_000 + b"]" * 20_000, data), "header"),
        "format_version": (edit(raw, at("format", 99)), "format 99"),
        "data_crc32_value": (edit(raw, at("data_crc32", -1)), "is not a CRC-32"),
    }


def _fields(raw: bytes) -> dict:
    header, _ = parts(raw)
    storage = next(i for i, d in enumerate(header["dispatches"]) if d["buffers"])
    constant = next(i for i, b in enumerate(header["buffers"]) if b["role"] == "constant")
    scratch = next(i for i, b in enumerate(header["buffers"]) if b["role"] == "scratch")
    writer = next(i for i, d in enumerate(header["dispatches"])
                  if "read_write" in header["kernels"][d["kernel"]]["bindings"])
    uniform = next(i for i, d in enumerate(header["dispatches"]) if d["uniform"])

    def write_constant(h):
        d = h["dispatches"][writer]
        kinds = [k for k in h["kernels"][d["kernel"]]["bindings"] if k != "uniform"]
        d["buffers"][kinds.index("read_write")] = constant

    def grow_tensor(h):
        h["tensors"][0]["shape"][0] += 1

    def second_tensor(h):
        h["tensors"].append(dict(h["tensors"][0]))

    return {
        "missing_field": (edit(raw, at("dispatches", _DELETE)), "dispatches"),
        "tensor_missing": (edit(raw, lambda h: h["tensors"].pop(0)), "constant data is missing"),
        "tensor_size": (edit(raw, grow_tensor), "mis-sized or out of bounds"),
        "tensor_offset": (edit(raw, at("tensors.0.offset", 32)), "mis-sized or out of bounds"),
        "tensor_dtype": (edit(raw, at("tensors.0.dtype", "f64")), "unknown dtype"),
        "tensor_twice": (edit(raw, second_tensor), "two tensors for buffer"),
        "tensor_not_constant": (edit(raw, lambda h: h["tensors"].append({**h["tensors"][0], "buffer": scratch})),
                                "not a constant"),
        "constant_larger": (edit(raw, at(f"buffers.{constant}.size", 4)), "constant larger than buffer"),
        "negative_size": (edit(raw, at("buffers.0.size", -4)), "bad size"),
        "fractional_size": (edit(raw, at("buffers.0.size", 40.5)), "40.5 is not an integer"),
        "unknown_role": (edit(raw, at("buffers.0.role", "uniform")), "unknown role"),
        "input_buffer": (edit(raw, at("inputs.0.buffer", 99)), "bad buffer"),
        "input_role": (edit(raw, at("inputs.0.buffer", constant)), "is not an input buffer"),
        "input_dtype": (edit(raw, at("inputs.0.dtype", "float64")), "unknown dtype"),
        "input_small": (edit(raw, at("inputs.0.shape.0", 1000)), "buffer too small"),
        "dangling_buffer": (edit(raw, at(f"dispatches.{storage}.buffers.0", 999)), "bad buffer index"),
        "binding_count": (edit(raw, lambda h: h["dispatches"][storage]["buffers"].append(0)), "binds"),
        "writes_constant": (edit(raw, write_constant), "writes an input or a constant"),
        "kernel_index": (edit(raw, at("dispatches.0.kernel", 7)), "bad kernel index"),
        "grid_zero": (edit(raw, at("dispatches.0.grid", [0, 1, 1])), "bad grid"),
        "grid_large": (edit(raw, at("dispatches.0.grid", [70000, 1, 1])), "bad grid"),
        "grid_total": (edit(raw, at("dispatches.0.grid", [65535, 65535, 1])), "bad grid"),
        "grid_shape": (edit(raw, at("dispatches.0.grid", [1, 1])), "is not [x, y, z]"),
        "short_uniform": (edit(raw, at(f"dispatches.{uniform}.uniform", [1])), "uniform words for"),
        "uniform_word": (edit(raw, at(f"dispatches.{uniform}.uniform.0", -1)), "not a u32"),
        "output_buffer": (edit(raw, at("outputs.0.buffer", 99)), "bad buffer"),
        "output_dtype": (edit(raw, at("outputs.0.dtype", "complex64")), "unknown dtype"),
        "output_view": (edit(raw, at("outputs.0.offset", 10**6)), "reaches past its buffer"),
        "output_negative": (edit(raw, at("outputs.0.strides.0", -3)), "reaches past its buffer"),
        "output_tree": (edit(raw, at("output_tree", {"type": "tuple", "items": [{"type": "leaf"}] * 2})),
                        "output tree does not match"),
        "input_tree": (edit(raw, at("input_tree.items.0.items", [])), "input tree does not match"),
        "input_tree_kind": (edit(raw, at("input_tree.items.0.type", "list")),
                            "is not a tuple of (positional arguments, keyword arguments)"),
        "tree_node": (edit(raw, at("output_tree", {"type": "set"})), "bad tree node"),
        "tree_depth": (edit(raw, at("output_tree", _nested(70))), "bad tree node"),
        "tree_const": (edit(raw, at("input_tree.items.1", {"type": "dict", "keys": ["k"], "items": [
            {"type": "const", "value": [1]}]})), "a const tree node holds"),
        "tree_keys": (edit(raw, at("input_tree.items.1", {"type": "dict", "keys": ["k", "k"], "items": [
            {"type": "const", "value": 1}] * 2})), "keys do not match its items"),
        "symbol": (edit(raw, at("outputs.0.shape.0", "nope")), "undeclared symbol"),
        "expression_op": (edit(raw, at("outputs.0.shape.0", ["**", 2, 3])), "unknown expression operator"),
        "expression_arity": (edit(raw, at("outputs.0.shape.0", ["//", 2])), "with 1 arguments"),
        "expression_empty": (edit(raw, at("outputs.0.shape.0", [])), "not an expression"),
        "expression_float": (edit(raw, at("outputs.0.offset", 0.5)), "not an integer"),
        "expression_divisor": (edit(raw, at("outputs.0.offset", ["//", 1, ["+", 2, -2]])), "includes 0"),
        "scratch_unbound": (edit(raw, lambda h: h["buffers"].append({"size": 4, "role": "scratch"})),
                            "a scratch buffer no dispatch binds"),
        "source_index": (edit(raw, at("kernels.0.source", 99)), "bad source index"),
        "source_nesting": (edit(raw, lambda h: h["sources"].__setitem__(0, h["sources"][0] + "(" * 65 + ")" * 65)),
                           "brackets nested deeper than 64"),
        "source_unbalanced": (edit(raw, lambda h: h["sources"].__setitem__(0, h["sources"][0] + "}")),
                              "or unbalanced"),
        "tensor_rank": (edit(raw, lambda h: h["tensors"][0].update(shape=[1] * 16 + h["tensors"][0]["shape"])),
                        "dimensions, over 16"),
    }


def _nested(depth: int) -> dict:
    node: dict = {"type": "leaf"}
    for _ in range(depth):
        node = {"type": "tuple", "items": [node]}
    return node


def _kernels(raw: bytes, f16: bytes) -> dict:
    h16, _ = parts(f16)
    half = next(i for i, k in enumerate(h16["kernels"]) if k.get("requires") == ["shader-f16"])
    fallback = h16["kernels"][half]["fallback"]
    return {
        "binding_kind": (edit(raw, at("kernels.0.bindings.0", "sampler")), "unknown binding kind"),
        "uniform_missing": (edit(raw, at("kernels.0.uniform", _DELETE)), "a uniform binding needs a uniform layout"),
        "uniform_layout": (edit(raw, at("kernels.0.uniform.size", 12)), "bad uniform layout"),
        "uniform_field": (edit(raw, at("kernels.0.uniform.fields.0.type", "f64")), "bad uniform layout"),
        "override_value": (edit(raw, at("kernels.0.overrides.HAS_BIAS", "yes")), "an override is not a number"),
        "engine_source": (edit(raw, at("kernels.0.engine_sources", {"wgpu": 5})), "bad engine source"),
        "workgroup_zero": (edit(raw, at("kernels.0.workgroup_size", [0, 1, 1])), "bad workgroup size"),
        "workgroup_large": (edit(raw, at("kernels.0.workgroup_size", [1024, 2, 1])), "bad workgroup size"),
        "workgroup_shape": (edit(raw, at("kernels.0.workgroup_size", [64])), "is not [x, y, z]"),
        "workgroup_memory": (edit(raw, at("kernels.0.workgroup_bytes", -16)), "bad workgroup memory"),
        "workgroup_missing": (edit(raw, at("kernels.0.workgroup_bytes", _DELETE)), "workgroup_bytes"),
        "undeclared_feature": (edit(raw, at("kernels.0.requires", ["teleport"])),
                               "needs teleport, which the file does not require"),
        "unneeded_feature": (edit(raw, at("requires", ["subgroups"])), "which no dispatch needs"),
        "feature_name": (edit(raw, at("kernels.0.requires", [7])), "is not a string"),
        "fallback_index": (edit(raw, at("kernels.0.fallback", 99)), "bad fallback index"),
        "fallback_not_f16": (edit(raw, at("kernels.0.fallback", 0)), "does not require shader-f16"),
        "f16_fallback": (edit(f16, at(f"kernels.{half}.fallback", _DELETE)), "names no fallback"),
        "fallback_requires": (edit(f16, at(f"kernels.{fallback}.requires", ["subgroups"])),
                              "requires features or differs in bindings or Params"),
        "targets_null": (edit(raw, at("kernels.0.targets", None)), "targets: expected a list"),
        "entry_name": (edit(raw, at("kernels.0.entry", "main\0ignored")), "is not a WGSL identifier"),
        "override_name": (edit(raw, at("kernels.0.overrides.HAS\0BIAS", 1)), "is not a WGSL identifier"),
    }


def _dynamic(raw: bytes) -> dict:
    header, _ = parts(raw)
    (name,) = header["symbols"]
    counted = next(i for i, d in enumerate(header["dispatches"]) if "count" in d)
    grid = header["dispatches"][counted]["grid"]

    def unsized(h):
        h["symbols"]["t"] = {"lo": 1, "hi": 4, "hint": 2}

    def option(h):  # an option without the dispatch's count
        d = h["dispatches"][counted]
        d["options"] = [{"kernel": d["kernel"], "uniform": d["uniform"], "grid": d["grid"]}]

    return {
        "symbol_range": (edit(raw, at(f"symbols.{name}.hi", 2**31)), f"symbol {name}: range"),
        "symbol_low": (edit(raw, at(f"symbols.{name}.lo", -1)), f"symbol {name}: range"),
        "symbol_hint": (edit(raw, at(f"symbols.{name}.hint", 0)), f"symbol {name}: range"),
        "symbol_unsized": (edit(raw, unsized), "is not the size of any input dimension"),
        "patch_type": (edit(raw, at(f"dispatches.{counted}.patches.0.1", "f64")), "bad uniform patch"),
        "patch_offset": (edit(raw, at(f"dispatches.{counted}.patches.0.0", 4096)), "bad uniform patch"),
        "patch_unaligned": (edit(raw, at(f"dispatches.{counted}.patches.0.0", 2)), "bad uniform patch"),
        "patch_range": (edit(raw, at(f"dispatches.{counted}.patches.0.2", ["+", name, -2])), "bad uniform patch"),
        "patch_shape": (edit(raw, at(f"dispatches.{counted}.patches.0", [0, "u32"])),
                        "is not [offset, type, expression]"),
        "count_grid": (edit(raw, at(f"dispatches.{counted}.grid", [grid[0] + 1, 1, 1])),
                       "its grid is not its workgroup count's largest value folded"),
        "count_negative": (edit(raw, at(f"dispatches.{counted}.count", ["+", name, -2])),
                           "its grid is not its workgroup count's largest value folded"),
        "count_large": (edit(raw, at(f"dispatches.{counted}.count", ["*", name, 10**8])),
                        "its grid is not its workgroup count's largest value folded"),
        "dynamic_options": (edit(raw, option), "is not sized as the dispatch is"),
        "output_symbol_view": (edit(raw, at("outputs.0.shape.0", ["+", name, 1])), "reaches past its buffer"),
    }


def _structured(raw: bytes) -> dict:
    header, _ = parts(raw)
    status = next(i for i, b in enumerate(header["buffers"]) if b["role"] == "status")
    return {
        "two_status": (edit(raw, lambda h: h["buffers"].append({"size": 4, "role": "status"})),
                       "more than one status buffer"),
        "status_small": (edit(raw, lambda h: h["checks"].append(dict(h["checks"][0]))),
                         "checks without a status buffer large enough for them"),
        "status_read": (edit(raw, at("outputs.0.buffer", status), at(f"buffers.{status}.size", 64)),
                        "a status buffer an output reads"),
        "check_message": (edit(raw, at("checks.0.message", 3)), "is not a string"),
    }


def _groups(raw: bytes) -> dict:
    header, _ = parts(raw)
    leader = next(i for i, d in enumerate(header["dispatches"]) if d.get("options") and not d.get("follows"))
    member = leader + 1
    largest_read = max((i for i, b in enumerate(header["buffers"]) if b["role"] != "scratch"),
                       key=lambda i: header["buffers"][i]["size"])  # holds the view: only the unwritten rule breaks
    other = next(k for k, kernel in enumerate(header["kernels"])
                 if kernel["bindings"] != header["kernels"][header["dispatches"][leader]["kernel"]]["bindings"])
    return {
        "option_kernel": (edit(raw, at(f"dispatches.{leader}.options.0.kernel", 999)), "bad option"),
        "option_interface": (edit(raw, at(f"dispatches.{leader}.options.0.kernel", other)),
                             "differs in bindings or Params"),
        "option_uniform": (edit(raw, at(f"dispatches.{leader}.options.0.uniform", [0])),
                           "differs in bindings or Params"),
        "option_grid": (edit(raw, at(f"dispatches.{leader}.options.0.grid", [0, 1, 1])), "bad grid"),
        "follows_far": (edit(raw, at(f"dispatches.{member}.follows", 2)), "follows no group leader"),
        "follows_count": (edit(raw, lambda h: h["dispatches"][member]["options"].pop()), "follows no group leader"),
        "result_on_member": (edit(raw, at(f"dispatches.{member}.result", header["dispatches"][leader]["result"]),
                                  at(f"dispatches.{member}.tolerance", 0.01)),
                             "a result on a dispatch that leads no group"),
        "result_tolerance": (edit(raw, at(f"dispatches.{leader}.tolerance", 2)), "tolerance 2"),
        "result_unwritten": (edit(raw, at(f"dispatches.{leader}.result.0.buffer", largest_read)),
                             "which its group does not write"),
        "result_past_buffer": (edit(raw, at(f"dispatches.{leader}.result.0.offset", 1 << 30)),
                               "a result view reaches past its buffer"),
        "result_dtype": (edit(raw, at(f"dispatches.{leader}.result.0.dtype", "bf16")),
                         "a result view of unknown dtype"),
        "result_symbolic": (edit(raw, at(f"dispatches.{leader}.result.0.offset", "s")), "is not an integer"),
    }


def _hostile(raw: bytes, dyn: bytes) -> dict:
    """What a well-formed, well-signed file may ask for to harm a runtime (docs/artifact.md, Running it): values
    no runtime reads exactly, reachable divisions by zero, strings no engine takes, source a shader compiler
    crashes on, structure that disagrees with itself."""
    header, data = parts(raw)
    constant = next(i for i, b in enumerate(header["buffers"]) if b["role"] == "constant")
    writer = next(i for i, d in enumerate(header["dispatches"])
                  if "read_write" in header["kernels"][d["kernel"]]["bindings"])
    uniform = next(i for i, d in enumerate(header["dispatches"]) if d["uniform"])
    hd, _ = parts(dyn)
    (name,) = hd["symbols"]
    zero_at_lo = ["+", name, -hd["symbols"][name]["lo"]]  # a divisor that is 0 at the symbol's lowest value
    patched = next(i for i, d in enumerate(hd["dispatches"]) if d.get("patches"))
    counted = next(i for i, d in enumerate(hd["dispatches"]) if "count" in d)

    def text(change, marker: str, literal: str) -> bytes:
        """An edit, then the JSON string `marker` replaced by raw text json will not write."""
        h = json.loads(json.dumps(header))
        change(h)
        return pack(json.dumps(h, separators=(",", ":")).replace(json.dumps(marker), literal).encode(), data)

    def alias(h):
        d = h["dispatches"][writer]
        kinds = [k for k in h["kernels"][d["kernel"]]["bindings"] if k != "uniform"]
        d["buffers"][kinds.index("read")] = d["buffers"][kinds.index("read_write")]

    def unwritten(h):
        h["buffers"].append({"size": h["buffers"][h["outputs"][0]["buffer"]]["size"], "role": "scratch"})
        h["outputs"][0]["buffer"] = len(h["buffers"]) - 1

    def rank(h):
        t = h["outputs"][0]
        t["shape"], t["strides"] = [1] * 15 + t["shape"], [0] * 15 + t["strides"]

    def nested(depth):
        e = 1
        for _ in range(depth):
            e = ["+", e, 1]
        return e

    return {
        "patch_divisor": (edit(dyn, at(f"dispatches.{patched}.patches.0.2", ["//", 64, zero_at_lo])), "includes 0"),
        "count_divisor": (edit(dyn, at(f"dispatches.{counted}.count", ["%", 64, zero_at_lo])), "includes 0"),
        "expression_range": (edit(raw, at("outputs.0.offset", ["*", 2**52, 2**52])), "is beyond 53 bits"),
        "expression_depth": (edit(raw, at("outputs.0.offset", nested(40))), "nested deeper than 32"),
        "huge_integer": (text(at("outputs.0.offset", "<huge>"), "<huge>", "9" * 5000), "out of range"),
        "unsafe_integer": (edit(raw, at("meta.x", 2**53)), "out of range"),
        "surrogate_source": (edit(raw, lambda h: h["sources"].__setitem__(0, "// \ud800\n" + h["sources"][0])),
                             "lone surrogate"),
        "surrogate_name": (edit(raw, at("kernels.0.name", "gemm\ud800")), "lone surrogate"),
        "long_statement": (edit(raw, lambda h: h["sources"].__setitem__(
            0, "const hostile = " + "+".join(["1"] * 2000) + ";\n" + h["sources"][0])),
            "a statement of more than 1,024 tokens"),
        "output_rank": (edit(raw, rank), "17 dimensions, over 16"),
        "long_uniform": (edit(raw, lambda h: h["dispatches"][uniform]["uniform"].extend([0, 0, 0, 0])),
                         "uniform words for"),
        "aliased_write": (edit(raw, alias), "binds a buffer it writes twice"),
        "grid_over_data": (edit(raw, at(f"dispatches.{writer}.grid", [64, 1, 1])), "workgroups for"),
        "output_unwritten": (edit(raw, unwritten), "scratch that no dispatch writes"),
        "output_dtype_input": (edit(raw, at("outputs.0.buffer", header["inputs"][0]["buffer"]),
                                    at("outputs.0.dtype", "int32")), "holds no input stored as i32"),
        "output_dtype_constant": (edit(raw, at("outputs.0.buffer", constant), at("outputs.0.dtype", "int32")),
                                  "holds constants stored as f32, not i32"),
        "optional_null": (edit(raw, at("requires", None)), "requires: expected a list"),  # null is no default
    }


def _packed(raw: bytes) -> dict:
    """A q4 tensor's own fields (docs/artifact.md, "Packed weights")."""
    packed = next(i for i, t in enumerate(parts(raw)[0]["tensors"]) if t["dtype"] == "q4")
    return {
        "packed_size": (edit(raw, at(f"tensors.{packed}.group", 64)), "mis-sized or out of bounds"),
        "packed_group": (edit(raw, at(f"tensors.{packed}.group", 12)), "straddles u32 words"),
        "packed_zero_points": (edit(raw, at(f"tensors.{packed}.zero_points", 1)), "zero_points is not a boolean"),
    }


def _compile_cost(raw: bytes) -> dict:
    """A source past each bound of what it costs to compile (webgpu_torch/compile_cost.py), before tiny's."""
    from ..wgsl_cost import COST, array, chain, doubling, else_ifs, functions

    def prepended(wgsl: str) -> bytes:
        return edit(raw, lambda h: h["sources"].__setitem__(0, wgsl + h["sources"][0]))

    aliases = "".join(f"alias T{i + 1} = T{i};\n" for i in range(70))
    return {
        "source_not_ascii": (prepended("const \u00e9 = 1;\n"), "not ASCII"),
        "source_block_comment": (prepended("/* a comment */\n"), "a block comment"),
        "source_private": (prepended("var<private> p: f32;\n"), "a private variable"),
        "source_else_if": (prepended(else_ifs(64)), "brackets nested deeper than 64"),
        "source_functions": (prepended(functions(COST["max_functions"])), "functions, over 256"),
        "source_call_depth": (prepended(chain(COST["max_call_depth"] + 1)), "calls nested more than 32 deep"),
        "source_recursion": (prepended("fn r0() { r1(); }\nfn r1() { r0(); }\n"), "call themselves"),
        "source_function_twice": (prepended("fn h0() {}\nfn h0() {}\n"), "function h0 declared twice"),
        "source_function_cost": (prepended(doubling(20)), "costs more than 98,304 tokens"),
        "source_array_cost": (prepended(array(4096)), "function h0 costs more than 98,304 tokens"),
        "source_cost": (prepended(doubling(12, "a") + doubling(12, "b") + doubling(12, "c")),
                        "more than 196,608 tokens"),
        "source_array_size": (prepended("var<workgroup> w: array<f32, 65536>;\n"), "more than 65,535 elements"),
        "source_array_count": (prepended("var<workgroup> w: array<f32, select(1u, 2u, true)>;\n"),
                               "not a positive constant"),
        "source_type_depth": (prepended(f"alias T0 = f32;\n{aliases}var<workgroup> w: array<T70, 4>;\n"),
                              "nested more than 64 deep"),
    }


def _classes(raw: bytes) -> dict:
    """Output classes outside the allowlist (docs/artifact.md, Trees)."""
    two = [{"type": "leaf"}]

    def output(node: dict) -> bytes:
        return edit(raw, at("output_tree", {"items": two, **node}))

    return {
        "tree_class": (output({"type": "dict", "keys": ["x"], "class": "webgpu_torch.packing.Packing"}),
                       "is not one a compiled program records"),
        "tree_class_tuple": (output({"type": "tuple", "class": "collections.OrderedDict"}),
                             "is not one a compiled program records"),
        "tree_fields": (output({"type": "tuple", "class": "a.Pair", "fields": ["x", "y"]}),
                        "fields are not distinct names, one per item"),
    }
