"""The uniform block of a launch: where its sizes, index maps and scalars sit.

Binding 0 of every generated kernel is an array of ``vec4<u32>`` words: a head of
``HEAD_WORDS`` (the element count, the reduced count, threads per row, rows per
workgroup; a kernel uses what it needs), the index space, each map's offset and strides
(two's-complement), then the scalars' bits. The renderers read word ``w`` as
:func:`param`; the backends write :func:`param_bytes`.
"""

from __future__ import annotations

import numpy as np

from ..._core.dtype import DType
from ...kernel import Kernel, LaunchArgs

__all__ = ["HEAD_WORDS", "param", "param_words", "param_bytes"]

HEAD_WORDS = 4  # n, n_red, threads per row, rows per workgroup


def param(word: int) -> str:
    return f"params.w[{word // 4}][{word % 4}]"


def param_words(kernel: Kernel, args: LaunchArgs, head: tuple[int, int, int, int]) -> list[int]:
    """The uniform words of one launch: head, the index space, each map's offset and
    strides (as two's-complement u32), then the scalars' bits."""
    words = list(head) + list(args.shape)
    for offset, strides in args.maps:
        words.append(offset & 0xFFFFFFFF)
        words.extend(s & 0xFFFFFFFF for s in strides)
    for dt, value in zip(kernel.scalars, args.scalars, strict=True):
        if dt is DType.bool:
            words.append(int(bool(value)))
        else:  # a float16 scalar travels as a float32 word, a 64-bit one as two (low first)
            word_np = np.float32 if dt is DType.float16 else dt.np
            words.extend(int(w) for w in np.array([value], dtype=word_np).view(np.uint32))
    return words


def param_bytes(kernel: Kernel, args: LaunchArgs, head: tuple[int, int, int, int]) -> bytes:
    """:func:`param_words` as the uniform block's bytes (u32 words, whole vec4s)."""
    words = param_words(kernel, args, head)
    words += [0] * (-len(words) % 4)
    return np.array(words, dtype=np.uint64).astype(np.uint32).tobytes()
