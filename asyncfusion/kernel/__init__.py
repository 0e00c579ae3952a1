"""The kernel IR and the lowering of op blocks to it."""

from .ir import Arg, Instr, Kernel, LaunchArgs, Level, Load, Reduce, Store
from .lower import Lowered, align_to, copy_kernel, lower, matmul_align

__all__ = ["Arg", "Instr", "Kernel", "LaunchArgs", "Level", "Load", "Reduce", "Store",
           "Lowered", "align_to", "copy_kernel", "lower", "matmul_align"]
