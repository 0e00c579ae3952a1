"""Fault injection: make chosen launches or allocations fail, to test fault isolation.

Used through ``Device.inject_fault``; a backend calls :meth:`FaultInjector.check` before
each launch and allocation. Rules are consumed as they fire.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = ["FaultInjector", "InjectedFault"]


class InjectedFault(RuntimeError):
    """The failure a fault-injection rule produces."""


@dataclass(slots=True)
class _Rule:
    kind: str
    op: str | None
    remaining: int | None  # None: fires every time until removed


class FaultInjector:
    def __init__(self) -> None:
        self._rules: list[_Rule] = []
        self._lock = threading.Lock()

    def add(self, kind: str, op: str | None, count: int | None) -> _Rule:
        if kind not in ("launch", "alloc"):
            raise ValueError(f"fault kind must be 'launch' or 'alloc', not {kind!r}")
        rule = _Rule(kind, op, count)
        with self._lock:
            self._rules.append(rule)
        return rule

    def remove(self, rule: _Rule) -> None:
        with self._lock:
            if rule in self._rules:
                self._rules.remove(rule)

    def check(self, kind: str, ops: tuple[str, ...] = ()) -> None:
        if not self._rules:
            return
        with self._lock:
            for rule in self._rules:
                if rule.kind == kind and (rule.op is None or rule.op in ops):
                    if rule.remaining is not None:
                        rule.remaining -= 1
                        if rule.remaining <= 0:
                            self._rules.remove(rule)
                    what = f" of {rule.op}" if rule.op else ""
                    raise InjectedFault(f"injected {kind} failure{what}")
