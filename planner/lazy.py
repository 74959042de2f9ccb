"""A package's public names, each imported from its module on first use (PEP 562).

`planner.app`, `planner.output` and `planner.controller` export what the command line calls this way,
so listing the commands or printing the version imports none of the stages behind them.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Collection, Mapping
from typing import Any


def exports(package: str, table: Mapping[str, str], submodules: Collection[str] = ()) -> Callable[[str], Any]:
    """The package's `__getattr__`: `table` maps each exported name to the module that defines it;
    `submodules` are the package's modules exported whole."""

    def __getattr__(name: str) -> Any:
        if name in submodules:
            return importlib.import_module(f"{package}.{name}")
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # found once: later uses are plain attribute reads
        return value

    return __getattr__
