"""The public surface: everything in ``__all__`` exists, errors explain themselves."""

from __future__ import annotations

import inspect

import asyncfusion as af
from asyncfusion._core import errors


def test_all_names_exist_and_nothing_private_leaks():
    for name in af.__all__:
        assert hasattr(af, name), name
        assert not name.startswith("_")
    public = {n for n in dir(af) if not n.startswith("_") and not inspect.ismodule(getattr(af, n))}
    assert public <= set(af.__all__), public - set(af.__all__)


def test_every_error_says_when_it_is_raised_and_derives_from_the_base():
    for name in errors.__all__:
        cls = getattr(errors, name)
        if not isinstance(cls, type):  # http_status: the HTTP code for any exception
            continue
        assert issubclass(cls, af.AsyncFusionError)
        assert cls.__doc__ and cls.__doc__.startswith("Raised when"), name
