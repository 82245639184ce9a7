"""torch.special's functions beyond the elementwise kernel's: the Hurwitz zeta function, polygamma of any order
(0 and 1 are the elementwise digamma and trigamma), the orthogonal polynomials (Chebyshev T, U, V, W and
their shifted forms, Hermite H and He, Laguerre, Legendre), the Bessel functions J0, J1, Y0, Y1 and the
modified ones (i0, i0e, i1, i1e, K0, K1 and their scaled forms), the spherical Bessel j0, ndtri, erfcx (and so
log_ndtr), nextafter and frexp — float results of one or two operands, broadcast, as torch's float32 kernels
compute them (special.wgsl).

They have a kernel of their own because a pipeline compiles every function its op switch reaches: in the
elementwise kernel, built many times by every model, their code would cost each of those pipelines.
"""

from __future__ import annotations

import re
from numbers import Number

from ...format import dtypes
from ...format.program import Tensor
from .. import layout, wgsl
from ..builder import Builder, KernelSpec
from .elementwise import MAX_DIMS, emit, uniform_input
from .registry import NodeView, OpCase, register

FILE = "special.wgsl"
OP_CODES = {name.lower(): int(code) for name, code in
            re.findall(r"const OP_(\w+): u32 = (\d+)u;", wgsl.kernel_source(FILE))}
# Functions of self and other (either may be a number: the *_scalar overloads).
BINARY = {"aten.special_zeta.default": "zeta", "aten.special_zeta.other_scalar": "zeta",
          "aten.special_zeta.self_scalar": "zeta", "aten.nextafter.default": "nextafter"}
# Functions of one operand (self, or x for the modified_* overloads).
UNARY = {"aten.special_spherical_bessel_j0.default": "spherical_bessel_j0", "aten.i0.default": "i0",
         "aten.special_i0e.default": "i0e", "aten.special_i1.default": "i1", "aten.special_i1e.default": "i1e",
         "aten.special_modified_bessel_i0.default": "i0", "aten.special_modified_bessel_i1.default": "i1",
         "aten.special_modified_bessel_k0.default": "k0", "aten.special_modified_bessel_k1.default": "k1",
         "aten.special_scaled_modified_bessel_k0.default": "k0e",
         "aten.special_scaled_modified_bessel_k1.default": "k1e", "aten.special_ndtri.default": "ndtri",
         "aten.special_erfcx.default": "erfcx",
         **{f"aten.special_bessel_{f}.default": f"bessel_{f}" for f in ("j0", "j1", "y0", "y1")}}
# The orthogonal polynomials of x, of order n (a tensor, or a number: n_scalar).
POLYNOMIALS = {f"aten.special_{name}.{overload}": name for overload in ("default", "n_scalar") for name in (
    *(f"{shift}chebyshev_polynomial_{kind}" for shift in ("", "shifted_") for kind in "tuvw"),
    "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")}


def emit_special(ctx: Builder, op: str, a: Tensor, b: Tensor | Number, shape: tuple, out_dtype: str) -> Tensor:
    """op(a, b) over `shape` into a fresh contiguous tensor; a number b travels in Params."""
    out = ctx.new(shape, out_dtype)
    av = layout.broadcast_to(a, shape)
    bv = layout.broadcast_to(b, shape) if isinstance(b, Tensor) else av
    params = {"numel": out.numel, "ndim": len(shape), "a_offset": av.offset, "b_offset": bv.offset,
              "scalar": 0.0 if isinstance(b, Tensor) else float(b), "shape": shape, "a_strides": av.strides,
              "b_strides": bv.strides}
    spec = KernelSpec.of(FILE, f"special[{op}]", consts={"A": dtypes.dtype(av.dtype).wgsl,
                                                         "B": dtypes.dtype(bv.dtype).wgsl,
                                                         "Out": dtypes.dtype(out_dtype).wgsl},
                         overrides={"OP": OP_CODES[op], "B_SCALAR": not isinstance(b, Tensor)})
    ctx.dispatch(spec, [av, bv, out], params, elements=out.numel)
    return out


def _check(node: NodeView) -> str | None:
    out = node.outputs[0]
    if not dtypes.is_float(out.dtype):
        return f"{node.target} producing {out.dtype} is not supported"
    if out.ndim > MAX_DIMS:
        return f"the result has {out.ndim} dims; at most {MAX_DIMS} are supported"
    return None


@register(*BINARY, check=_check)
def binary(ctx: Builder, node: NodeView) -> Tensor:
    x, y = node.args["self"], node.args["other"]
    if isinstance(x, Number):  # self_scalar: a 0-d constant
        x = ctx.constant(f"{node.name}_scalar", dtypes.scalar(x, "float32"), "float32")
    return emit_special(ctx, BINARY[node.target], x, y, node.out.shape, node.out.dtype)


@register(*POLYNOMIALS, check=_check)
def polynomial(ctx: Builder, node: NodeView) -> Tensor:
    a = node.args
    return emit_special(ctx, POLYNOMIALS[node.target], a["x"], a["n"], node.out.shape, node.out.dtype)


@register(*UNARY, check=_check)
def unary(ctx: Builder, node: NodeView) -> Tensor:
    x = node.args["self"] if "self" in node.args else node.args["x"]
    return emit_special(ctx, UNARY[node.target], x, 0.0, node.out.shape, node.out.dtype)


@register("aten.frexp.Tensor", check=_check)
def frexp(ctx: Builder, node: NodeView) -> list[Tensor]:
    """The mantissa and the int32 exponent, one dispatch each."""
    x, (mantissa, exponent) = node.args["self"], node.outputs
    return [emit_special(ctx, "frexp_mantissa", x, 0.0, x.shape, mantissa.dtype),
            emit_special(ctx, "frexp_exponent", x, 0.0, x.shape, exponent.dtype)]


def _check_polygamma(node: NodeView) -> str | None:
    if node.args["n"] < 0:
        return f"polygamma of order {node.args['n']} is not defined"
    return _check(node)


@register("aten.polygamma.default", check=_check_polygamma)
def polygamma(ctx: Builder, node: NodeView) -> Tensor:
    """Orders 0 and 1 are the elementwise digamma and trigamma; higher ones (-1)^(n+1) n! ζ(n + 1, x)."""
    x, n = node.args["self"], node.args["n"]
    if n < 2:
        return emit(ctx, ("digamma", "trigamma")[n], [x, 0.0], node.out.shape, out_dtype=node.out.dtype)
    return emit_special(ctx, "polygamma", x, float(n), node.out.shape, node.out.dtype)


def cases() -> list[OpCase]:
    import torch

    uniform = uniform_input

    def polynomials(x, n, s):  # every kind at x (the shifted ones and Laguerre at s), of orders n and of 9
        sp = torch.special
        return (*(f(x, m) for f in (sp.chebyshev_polynomial_t, sp.chebyshev_polynomial_u, sp.chebyshev_polynomial_v,
                                    sp.chebyshev_polynomial_w, sp.legendre_polynomial_p, sp.hermite_polynomial_h,
                                    sp.hermite_polynomial_he) for m in (n, 9)),
                *(f(s, m) for f in (sp.shifted_chebyshev_polynomial_t, sp.shifted_chebyshev_polynomial_u,
                                    sp.shifted_chebyshev_polynomial_v, sp.shifted_chebyshev_polynomial_w,
                                    sp.laguerre_polynomial_l) for m in (n, 9)))

    def orders():
        """Orders -1 to 14 (below and above the closed-form thresholds), a fifth of them not integers."""
        g = torch.Generator().manual_seed(3)
        return torch.randint(-1, 15, (37, 41), generator=g).float() + 0.5 * (torch.rand(37, 41, generator=g) > 0.8)

    nan, inf = float("nan"), float("inf")
    return [
        OpCase("polygamma_orders_0_and_1", lambda x, y: (torch.polygamma(0, x), torch.polygamma(1, x),
                                                         torch.special.polygamma(1, y)),
               [uniform(-7.5, 9.5, specials=[nan, inf, -inf, 0.0, -0.0, 0.5, 1.0, 1e-3, -1e-3, 5.9, 6.0, -2.5]),
                uniform(-30.0, 30.0, seed=2)]),
        # ζ and ψ^(n) near their poles and for negative q; a number on either side of ζ.
        OpCase("zeta_and_polygamma", lambda x, q, z: (
            torch.special.zeta(x, q), torch.special.zeta(x.round(), -q), torch.polygamma(2, z), torch.polygamma(3, z),
            torch.polygamma(4, z.abs() + 0.5), torch.special.zeta(x, 2.5), torch.special.zeta(2.5, q)),
            [uniform(1.0, 9.0, specials=[1.0, 0.5, nan, 2.0]), uniform(0.05, 6.0, seed=1, specials=[0.0, -2.0]),
             uniform(-8.5, 8.5, seed=2, specials=[0.0, -3.0, nan, inf])]),
        # The polynomials at ±1, inside (below and above the closed-form thresholds) and outside [-1, 1], of
        # negative and non-integer orders (not at NaN, where torch's float kernels return an uninitialised
        # value; ours NaN).
        OpCase("orthogonal_polynomials", polynomials,
               [uniform(-1.2, 1.2, specials=[1.0, -1.0, 1.0, -1.0, 0.0, 1.1, -1.05]), orders,
                uniform(-0.1, 1.1, seed=5, specials=[1.0, 0.0, 1.0, 0.0, 0.5])]),
        OpCase("modified_bessel_functions", lambda x, i: (
            torch.i0(x), torch.special.i0e(x), torch.special.i1(x), torch.special.i1e(x),
            torch.special.modified_bessel_i0(x), torch.special.modified_bessel_i1(x),
            torch.special.modified_bessel_k0(x), torch.special.modified_bessel_k1(x),
            torch.special.scaled_modified_bessel_k0(x), torch.special.scaled_modified_bessel_k1(x), torch.i0(i)),
            [uniform(-12.0, 30.0, specials=[0.0, -0.0, 8.0, -8.0, 2.0, 1e-3, nan, 85.0, -inf, inf]),
             lambda: torch.arange(-5, 6)]),
        OpCase("bessel_functions", lambda x: (torch.special.bessel_j0(x), torch.special.bessel_j1(x),
                                              torch.special.bessel_y0(x), torch.special.bessel_y1(x)),
               [uniform(-12.0, 40.0, specials=[0.0, -0.0, 5.0, -5.0, 1e-6, 4.99, 5.01, nan, inf, -inf, -2.0])]),
        OpCase("ndtri_middle_tails_edges_and_frexp", lambda p, x: (torch.special.ndtri(p), torch.frexp(x)),
               [uniform(0.0, 1.0, specials=[0.0, 1.0, 0.5, 1e-20, 1e-6, 0.13, 0.87, 0.999999, nan, -0.1, 1.1]),
                uniform(-1e6, 1e6, seed=3, specials=[0.0, -0.0, 1.0, 0.5, -3.0, 1e-40, 3e38, inf, -inf, nan])]),
        # erfcx(z)·z tends to 1/sqrt(pi): relative accuracy over the whole positive range.
        OpCase("erfcx_and_log_ndtr", lambda x, y, z: (torch.special.erfcx(x), torch.special.log_ndtr(x),
                                                      torch.special.erfcx(y), torch.special.erfcx(z) * z),
               [uniform(-9.0, 60.0, specials=[0.0, -0.0, 3.0, 50.0, 1e8, -26.8, nan, inf, -inf, -1.0, -1.5]),
                uniform(-2.0, 2.0, seed=1), uniform(0.5, 1000.0, seed=2)]),
        # nextafter's exact bits: tests/test_ops.py (a float64 reference only sees the values).
        OpCase("nextafter_and_spherical_bessel_j0_broadcast", lambda x, y: (
            torch.nextafter(x, y), torch.nextafter(x, x), torch.nextafter(y[0], torch.tensor(0.0)),
            torch.special.spherical_bessel_j0(x.t() * 10.0)),
            [uniform(-3.0, 3.0, specials=[nan, 1.0, -0.0, 0.01]),
             uniform(-3.0, 3.0, (41,), seed=1, specials=[1.0, 2.0, 0.0, 1.0])]),
    ]
