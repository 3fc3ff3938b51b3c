"""Optional test dependencies: a test module that needs one calls ``need(name)``,
which imports it, or skips the module where it is not installed, unless CI asks
for it (``NRPT_REQUIRE_TORCH=1`` for PyTorch): then its absence fails the run."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

#: The environment variable that makes a missing module an error, by module.
REQUIRED_BY = {"torch": "NRPT_REQUIRE_TORCH"}


def need(name: str) -> ModuleType:
    """The module ``name``, or a skip (a failure where its variable is ``1``)."""
    try:
        return importlib.import_module(name)
    except ImportError as err:
        variable = REQUIRED_BY.get(name)
        if variable and os.environ.get(variable) == "1":
            pytest.fail(f"{variable}=1 but {name} does not import: {err}", pytrace=False)
        pytest.skip(f"{name} is not installed", allow_module_level=True)
        raise  # not reached: skip raises
