"""``x.to(device)``: a tensor's values on another device, copied lazily (the copy's
runtime side is ``runtime/transfer.py``)."""

from __future__ import annotations

from .._core.dtype import check_held
from ..api.views import view
from ..ir import ExternOp
from ..lazy.tensor import Tensor
from ..runtime.device import Device
from ..runtime.transfer import Transfer

__all__ = ["copy_to"]


def copy_to(x: Tensor, target: Device) -> Tensor:
    """``x`` on ``target``, lazily (see ``runtime/transfer.py``)."""
    check_held(x.dtype, target, f"t{x.id}.to({target!r})")
    snapshot = view(x, x.view_layout, "copy-source")
    out = Tensor(x.shape, x.dtype, target)
    out_ir = out.out_ir()
    transfer = Transfer(snapshot)
    target.transfers.add(transfer)
    # A stream of its own: a read on the target that does not need the copy (the read
    # of another copy's source, say) leaves it queued, unsettled.
    target.register_on(("copy", id(transfer)), ExternOp(target.copy_work, (), (out_ir,),
                                                         (transfer,)), out_ir)
    return out
