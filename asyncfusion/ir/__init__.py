"""The IR: operation records, layouts and relative signatures (no execution here)."""

from .layout import IndexItem, Layout, dense_strides
from .ops import (CatOp, DropOp, ExternOp, ElementwiseOp, GatherOp, InitOp, MatmulOp, OperationIr,
                  ReduceOp, Renumber, ScalarIr, Signature, TensorIr, TensorStatus, ViewOp, numel)
from .ops import IotaOp

__all__ = ["IndexItem", "Layout", "dense_strides", "CatOp", "DropOp", "ElementwiseOp", "ExternOp",
           "GatherOp", "InitOp", "MatmulOp", "OperationIr", "ReduceOp", "Renumber", "ScalarIr", "Signature",
           "TensorIr", "TensorStatus", "ViewOp", "numel", "IotaOp"]
