"""asyncfusion: an async-first lazy tensor runtime that fuses element-wise ops into WGSL.

Tensor ops are recorded, not run; a device server fuses chains of them into single
compute kernels and dispatches them through wgpu. Read results with
``await tensor.to_data()``.
"""

import sys as _sys

from ._env import ensure_runtime_dir as _ensure_runtime_dir

_ensure_runtime_dir()  # before any wgpu driver loads: silences Mesa's XDG_RUNTIME_DIR errors

from .extend.custom_op import elementwise_op
from .extend.custom_kernel import KernelCompileError, custom_kernel
from .extend.adopt import DeviceBuffer, adopt, resolve
from .api.nonzero import nonzero
from .api.creation import (arange, empty, empty_like, eye, full, full_like, linspace, ones,
                       ones_like, rand, randn, tensor, zeros, zeros_like)
from .runtime import Device, DeviceOptions, DevicePool, default_device, open_device, open_pool
from .api.methods import attach as _attach
from .api.read import to_data
from .backends.wgpu.adapters import Adapter, adapters
from ._core.dtype import (DType, NarrowingWarning, bool_, complex64, complex128, float16, float32,
                          float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64)
from ._core.errors import (AsyncFusionError, AxisError, BlockingCallError, DataError,
                     DeviceClosedError, DeviceLostError, DeviceMismatchError, DTypeError,
                     ExecutionError, IndexingError, InputError, LimitError, NoAdapterError,
                     OptionError, Overloaded, ShapeError, http_status)
from .api.indexing import (argsort, gather, index_select, one_hot, sort, stack, take,
                       take_along_axis, topk)
from .api.interop import asarray, from_dlpack
from .api import linalg
from .api.linalg import matmul, matrix_transpose, tensordot
from .api.manipulation import (broadcast_arrays, broadcast_shapes, count_nonzero,
                           cumulative_prod, cumulative_sum, diff, expand_dims, isin, meshgrid,
                           moveaxis, permute_dims, repeat, reshape, roll, tile, tril, triu,
                           unstack, vecdot)
from .api.namespace import (__array_namespace_info__, astype, can_cast, e, finfo, iinfo, inf,
                        isdtype, nan, newaxis, pi, result_type)
from .api import elementwise as _elementwise
from .api.elementwise import *  # noqa: F403 - one function per op of the registry
from .engine.streams import StreamId
from .api.reductions import (all, any, argmax, argmin, clip, gelu, layer_norm, log_softmax,
                             logsumexp, max, mean, min, prod, silu, softmax, std, sum, var)
from .lazy.tensor import Tensor
from .lazy.complex_tensor import ComplexTensor
from .api.joining import cat, concat
from .api.views import (broadcast_to, contiguous, flip, permute, squeeze, transpose,
                        unsqueeze)
from .trace import take_launches, tracing
from .api.searching import searchsorted
from .api.sets import (UniqueAllResult, UniqueCountsResult, UniqueInverseResult, unique_all,
                   unique_counts, unique_inverse, unique_values)
from ._debug import IntermediateKeptWarning
from .api.complex_parts import LINALG as _COMPLEX_LINALG, PUBLIC as _COMPLEX_FORMS

globals().update(_COMPLEX_FORMS)  # the same functions, taking complex tensors too
for _name, _fn in {**_COMPLEX_FORMS, **_COMPLEX_LINALG}.items():
    if hasattr(linalg, _name):
        setattr(linalg, _name, _fn)  # af.linalg.matmul is af.matmul

__version__ = "0.1.0"
__array_api_version__ = "2025.12"
bool = bool_  # noqa: A001 - the Array API's name of the bool dtype

__all__ = [
    "Tensor", "ComplexTensor", "Device", "DeviceOptions", "DType", "StreamId", "open_device", "default_device",
    "to_data", "adapters", "Adapter", "DevicePool", "open_pool", "tensor", "asarray", "zeros",
    "ones", "full", "arange", "rand", "randn", "cat", "concat", "elementwise_op",
    "custom_kernel", "KernelCompileError", "resolve", "adopt", "DeviceBuffer", "matmul",
    "linalg", "take", "take_along_axis", "gather", "index_select", "stack", "one_hot", "topk",
    "sort", "argsort", "nonzero", "softmax", "log_softmax", "logsumexp", "layer_norm", "gelu",
    "silu", "clip", "mean", "var", "std", "sum", "prod", "max", "min", "any", "all", "argmax",
    "argmin", "reshape", "permute", "transpose", "broadcast_to", "squeeze", "unsqueeze",
    "flip", "contiguous", "matrix_transpose", "zeros_like", "ones_like", "full_like", "empty",
    "empty_like", "eye", "linspace", "from_dlpack", "broadcast_arrays", "broadcast_shapes",
    "isin", "count_nonzero", "cumulative_prod", "cumulative_sum", "diff", "expand_dims",
    "meshgrid", "moveaxis", "permute_dims", "repeat", "roll", "tile", "tril", "triu",
    "unstack", "vecdot", "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
    "e", "inf", "nan", "newaxis", "pi", "float16", "float32", "float64", "int32", "int64",
    "uint32", "bool_", "complex64", "complex128", "int8", "int16", "uint8", "uint16", "uint64", "tracing", "take_launches",
    "AsyncFusionError", "InputError", "Overloaded", "http_status", "ShapeError",
    "IndexingError", "DTypeError", "DeviceMismatchError", "AxisError", "LimitError",
    "DataError", "OptionError", "ExecutionError", "DeviceLostError", "DeviceClosedError",
    "BlockingCallError", "NoAdapterError", "tensordot", "searchsorted", "unique_all",
    "unique_counts", "unique_inverse", "unique_values", "UniqueAllResult",
    "UniqueCountsResult", "UniqueInverseResult", "IntermediateKeptWarning",
    "NarrowingWarning", "bool",
    *_elementwise.__all__,
]

_attach(_sys.modules[__name__])
