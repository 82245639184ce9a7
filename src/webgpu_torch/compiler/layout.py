"""Strided-view arithmetic on `Tensor`s: the zero-dispatch ops (views) and broadcasting.

Each function returns a new view of the same buffer, or None where the view cannot be expressed with strides
(the caller then materialises a contiguous copy first).
"""

from __future__ import annotations

from dataclasses import replace

from ..format.program import Tensor, contiguous_strides
from ..format.symbolic import Expr, known_zero


def normalize_dim(dim: int, ndim: int) -> int:
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise IndexError(f"dimension {dim} out of range for a {ndim}-d tensor")
    return dim % max(ndim, 1)


def permute(t: Tensor, dims: list[int]) -> Tensor:
    dims = [normalize_dim(d, t.ndim) for d in dims]
    return replace(t, shape=tuple(t.shape[d] for d in dims), strides=tuple(t.strides[d] for d in dims))


def broadcast_to(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Right-aligned numpy broadcasting: new and size-1 dims get stride 0."""
    if len(shape) < t.ndim:
        raise ValueError(f"cannot broadcast {list(t.shape)} to {list(shape)}")
    lead = len(shape) - t.ndim
    strides = [0] * lead
    for n, s, want in zip(t.shape, t.strides, shape[lead:], strict=True):
        if n == want:
            strides.append(s if n != 1 else 0)
        elif n == 1:
            strides.append(0)
        else:
            raise ValueError(f"cannot broadcast {list(t.shape)} to {list(shape)}")
    return replace(t, shape=tuple(shape), strides=tuple(strides))


def expand(t: Tensor, sizes: list[int]) -> Tensor:
    lead = len(sizes) - t.ndim
    shape = tuple(t.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
    return broadcast_to(t, shape)


def unsqueeze(t: Tensor, dim: int) -> Tensor:
    dim = normalize_dim(dim, t.ndim + 1)
    stride = t.strides[dim] * t.shape[dim] if dim < t.ndim else 1
    return replace(t, shape=t.shape[:dim] + (1,) + t.shape[dim:], strides=t.strides[:dim] + (stride,) +
                   t.strides[dim:])


def squeeze(t: Tensor, dims: list[int] | None) -> Tensor:
    drop = set(range(t.ndim)) if dims is None else {normalize_dim(d, t.ndim) for d in dims}
    keep = [i for i in range(t.ndim) if not (i in drop and t.shape[i] == 1)]
    return replace(t, shape=tuple(t.shape[i] for i in keep), strides=tuple(t.strides[i] for i in keep))


def slice_(t: Tensor, dim: int, start, end, step: int) -> Tensor:
    dim = normalize_dim(dim, t.ndim)
    n = t.shape[dim]
    if isinstance(n, Expr) or isinstance(start, Expr) or isinstance(end, Expr):
        lo, hi = _dynamic_bounds(start, end, n)
        count = hi - lo if step == 1 else (hi - lo + step - 1) // step
        if isinstance(count, int):
            count = max(0, count)
    else:
        lo, hi, _ = slice(start, end, step).indices(n)
        count = max(0, -(-(hi - lo) // step))
    shape = t.shape[:dim] + (count,) + t.shape[dim + 1:]
    strides = t.strides[:dim] + (t.strides[dim] * step,) + t.strides[dim + 1:]
    empty = isinstance(count, int) and count == 0
    return replace(t, shape=shape, strides=strides, offset=t.offset if empty else t.offset + lo * t.strides[dim])


def _dynamic_bounds(start, end, n) -> tuple:
    """A slice's [lo, hi) over a dim of dynamic size n, for the forms export produces (non-negative steps):
    None or a huge end means n, a negative bound counts from n, other bounds are taken as in range (export
    has checked them for the whole range of n)."""
    def at(v, default):
        if v is None or (isinstance(v, int) and v >= 2**62):
            return default
        return n + v if isinstance(v, int) and v < 0 else v

    return at(start, 0), at(end, n)


def select(t: Tensor, dim: int, index) -> Tensor:
    dim = normalize_dim(dim, t.ndim)
    n = t.shape[dim]
    if isinstance(n, Expr) or isinstance(index, Expr):
        index = n + index if isinstance(index, int) and index < 0 else index
    elif -n <= index < n:
        index %= n
    else:
        raise IndexError(f"index out of range for dimension {dim} of size {n}")
    return replace(t, shape=t.shape[:dim] + t.shape[dim + 1:], strides=t.strides[:dim] + t.strides[dim + 1:],
                   offset=t.offset + index * t.strides[dim])


def view(t: Tensor, shape: tuple[int, ...]) -> Tensor | None:
    """`t` reshaped without copying, or None where its strides do not allow it (torch's view rule)."""
    strides = _view_strides(t.shape, t.strides, shape)
    return None if strides is None else replace(t, shape=tuple(shape), strides=strides)


def _view_strides(old_shape, old_strides, new_shape) -> tuple[int, ...] | None:
    """Strides for `new_shape` over the same elements, or None where a new dim would span two runs of old
    dims that are not contiguous with each other."""
    if 0 in new_shape:
        return contiguous_strides(tuple(new_shape))
    runs: list[tuple[int, int]] = []  # maximal mergeable runs of old dims, outer to inner: (numel, stride)
    for n, s in zip(old_shape, old_strides, strict=True):
        if n == 1:
            continue
        if runs and runs[-1][1] == n * s:
            runs[-1] = (runs[-1][0] * n, s)
        else:
            runs.append((n, s))
    out = [0] * len(new_shape)
    left, stride = 1, 1  # elements of the current run not yet covered; stride of the next new dim
    for i in reversed(range(len(new_shape))):
        n = new_shape[i]
        if n != 1 and left == 1:
            if not runs:
                return None
            left, stride = runs.pop()
        if not known_zero(left % n):  # a dynamic remainder that does not simplify to 0: cannot prove a view
            return None
        out[i] = stride
        stride *= n
        left //= n
    return tuple(out) if left == 1 and not runs else None


def diagonal(t: Tensor, k: int, dim1: int, dim2: int) -> Tensor:
    """The diagonal `k` above (below, when negative) the main one of dims dim1 and dim2, as a last dim."""
    d1, d2 = (normalize_dim(d, t.ndim) for d in (dim1, dim2))
    rest = [d for d in range(t.ndim) if d not in (d1, d2)]
    n = max(0, min(t.shape[d1] + min(k, 0), t.shape[d2] - max(k, 0)))
    start = 0 if n == 0 else k * t.strides[d2] if k >= 0 else -k * t.strides[d1]
    return replace(t, shape=tuple(t.shape[d] for d in rest) + (n,),
                   strides=tuple(t.strides[d] for d in rest) + (t.strides[d1] + t.strides[d2],),
                   offset=t.offset + start)
