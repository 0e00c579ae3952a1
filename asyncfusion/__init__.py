"""asyncfusion: an async-first lazy tensor runtime that fuses element-wise ops into WGSL.

Tensor ops are recorded, not run; a device server fuses chains of them into single
compute kernels and dispatches them through wgpu. Read results with
``await tensor.to_data()``.
"""

import inspect as _inspect

from ._env import ensure_runtime_dir as _ensure_runtime_dir

_ensure_runtime_dir()  # before any wgpu driver loads: silences Mesa's XDG_RUNTIME_DIR errors

from .custom import elementwise_op
from .kernels_custom import KernelCompileError, custom_kernel
from .interop_device import DeviceBuffer, adopt, resolve
from .nonzero import nonzero
from .creation import (arange, empty, empty_like, eye, full, full_like, linspace, ones,
                       ones_like, rand, randn, tensor, zeros, zeros_like)
from .runtime import Device, DeviceOptions, DevicePool, default_device, open_device, open_pool
from .read import to_data
from .backends.wgpu.adapters import Adapter, adapters
from .dtype import (DType, NarrowingWarning, bool_, float16, float32, float64, int16, int32,
                    int64, uint16, uint32, uint64)
from .errors import (AsyncFusionError, AxisError, BlockingCallError, DataError,
                     DeviceClosedError, DeviceLostError, DeviceMismatchError, DTypeError,
                     ExecutionError, IndexingError, InputError, LimitError, NoAdapterError,
                     Overloaded, ShapeError, http_status)
from .indexing import (argsort, gather, index_select, one_hot, sort, stack, take,
                       take_along_axis, topk)
from .interop import asarray, from_dlpack
from .linalg import matmul, matrix_transpose, tensordot
from .manipulation import (broadcast_arrays, broadcast_shapes, count_nonzero,
                           cumulative_prod, cumulative_sum, diff, expand_dims, isin, meshgrid,
                           moveaxis, permute_dims, repeat, reshape, roll, tile, tril, triu,
                           unstack, vecdot)
from .namespace import (__array_namespace_info__, astype, can_cast, e, finfo, iinfo, inf,
                        isdtype, nan, newaxis, pi, result_type)
from .elementwise_api import (acos, acosh, add, asin, asinh, atan, atan2, atanh, bitwise_and,
                              bitwise_invert, bitwise_left_shift, bitwise_or,
                              bitwise_right_shift, bitwise_xor, conj, copysign, cosh, divide,
                              equal, expm1, greater, greater_equal, hypot, imag, less,
                              less_equal, log1p, log2, log10, logaddexp, logical_and,
                              logical_not, logical_or, logical_xor, multiply, negative,
                              nextafter, not_equal, positive, pow, real, reciprocal, signbit,
                              sinh, subtract, tan, trunc)
from .engine.streams import StreamId
from .reductions import (clip, gelu, layer_norm, log_softmax, logsumexp, mean, prod, silu,
                         softmax, sum, var)
from .tensor import Tensor, cat, concat, maximum, minimum, where
from .views import broadcast_to, contiguous, flip, permute, squeeze, unsqueeze
from .trace import take_launches, tracing
from .searching import searchsorted
from .sets import (UniqueAllResult, UniqueCountsResult, UniqueInverseResult, unique_all,
                   unique_counts, unique_inverse, unique_values)
from ._debug import IntermediateKeptWarning

__version__ = "0.1.0"
__array_api_version__ = "2025.12"
bool = bool_  # noqa: A001 - the Array API's name of the bool dtype

__all__ = [
    "Tensor", "Device", "DeviceOptions", "DType", "StreamId",
    "open_device", "default_device", "to_data", "adapters", "Adapter", "DevicePool",
    "open_pool",
    "tensor", "asarray", "zeros", "ones", "full", "arange", "rand", "randn",
    "where", "minimum", "maximum", "cat", "concat", "elementwise_op",
    "custom_kernel", "KernelCompileError", "resolve", "adopt", "DeviceBuffer",
    "matmul", "take", "take_along_axis", "gather", "index_select", "stack", "one_hot",
    "topk", "sort", "argsort", "nonzero",
    "softmax", "log_softmax", "logsumexp", "layer_norm", "gelu", "silu", "clip", "mean",
    "var", "std", "sum", "prod", "max", "min", "any", "all", "argmax", "argmin",
    "reshape", "permute", "transpose", "broadcast_to", "squeeze", "unsqueeze", "flip",
    "contiguous", "matrix_transpose", "square", "rsqrt", "floor", "ceil", "round", "sign",
    "isnan", "isinf", "isfinite", "floor_divide", "remainder", "exp", "log", "sqrt", "abs",
    "sin", "cos", "tanh", "sigmoid", "relu",
    "zeros_like", "ones_like", "full_like",
    "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
    "bitwise_invert", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
    "conj", "copysign", "cosh", "divide", "equal", "expm1", "greater", "greater_equal",
    "hypot", "imag", "less", "less_equal", "log1p", "log2", "log10", "logaddexp",
    "logical_and", "logical_not", "logical_or", "logical_xor", "multiply", "negative",
    "nextafter", "not_equal", "positive", "pow", "real", "reciprocal", "signbit", "sinh",
    "subtract", "tan", "trunc",
    "empty", "empty_like", "eye", "linspace", "from_dlpack",
    "broadcast_arrays", "broadcast_shapes", "isin", "count_nonzero", "cumulative_prod", "cumulative_sum", "diff",
    "expand_dims", "meshgrid", "moveaxis", "permute_dims", "repeat", "roll", "tile", "tril",
    "triu", "unstack", "vecdot",
    "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
    "e", "inf", "nan", "newaxis", "pi",
    "float16", "float32", "float64", "int32", "int64", "uint32", "bool_",
    "int16", "uint16", "uint64",
    "tracing", "take_launches",
    "AsyncFusionError", "InputError", "Overloaded", "http_status", "ShapeError", "IndexingError", "DTypeError", "DeviceMismatchError", "AxisError",
    "LimitError", "DataError", "ExecutionError", "DeviceLostError", "DeviceClosedError",
    "BlockingCallError", "NoAdapterError",
    "tensordot", "searchsorted", "unique_all", "unique_counts", "unique_inverse",
    "unique_values", "UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult",
    "IntermediateKeptWarning", "NarrowingWarning", "bool",
]


def _method(name: str, doc: str) -> object:
    def fn(x: Tensor, *args: object, **kwargs: object) -> Tensor:
        return getattr(x, name)(*args, **kwargs)  # type: ignore[no-any-return]
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    params = list(_inspect.signature(getattr(Tensor, name)).parameters.values())
    x = params[0].replace(name="x", kind=_inspect.Parameter.POSITIONAL_ONLY)
    fn.__signature__ = _inspect.Signature([x, *params[1:]])  # type: ignore[attr-defined]
    return fn


max = _method("max", "Maximum over an axis, a tuple of axes or all (NaN propagates).")  # noqa: A001
min = _method("min", "Minimum over an axis, a tuple of axes or all (NaN propagates).")  # noqa: A001
any = _method("any", "Whether any element is true (non-zero) over the axes.")  # noqa: A001
all = _method("all", "Whether every element is true (non-zero) over the axes.")  # noqa: A001
argmax = _method("argmax", "Index of the first maximum (one axis, or all flattened).")
argmin = _method("argmin", "Index of the first minimum (one axis, or all flattened).")
std = _method("std", "Standard deviation with ``correction`` (numpy's ddof).")
transpose = _method("transpose", "Swap two axes (the last two by default).")


square = _method("square", "x * x.")
rsqrt = _method("rsqrt", "1 / sqrt(x).")
floor = _method("floor", "Round down (integers unchanged).")
ceil = _method("ceil", "Round up (integers unchanged).")
round = _method("round", "Round half to even (integers unchanged).")  # noqa: A001
sign = _method("sign", "-1, 0 or 1 (NaN stays NaN).")
isnan = _method("isnan", "Element is NaN.")
isinf = _method("isinf", "Element is +-infinity.")
isfinite = _method("isfinite", "Element is neither NaN nor infinite.")
exp = _method("exp", "e ** x.")
log = _method("log", "Natural logarithm.")
sqrt = _method("sqrt", "Square root.")
abs = _method("abs", "Absolute value.")  # noqa: A001
sin = _method("sin", "Sine.")
cos = _method("cos", "Cosine.")
tanh = _method("tanh", "Hyperbolic tangent.")
sigmoid = _method("sigmoid", "1 / (1 + exp(-x)).")
relu = _method("relu", "max(x, 0).")
floor_divide = _method("__floordiv__", "x // y, rounding toward -infinity (as numpy).")
remainder = _method("__mod__", "x % y with the sign of y (as numpy).")
