"""The engine: plans, the explorer, the memory owner, and the runners that use them."""

from .memory import Memory, Poison, Storage
from .runner import Fusion, Plain, Runner

__all__ = ["Memory", "Poison", "Storage", "Fusion", "Plain", "Runner"]
