"""crc32c's C function, loaded without running the `crc32c` package's `__init__`.

That `__init__` calls `importlib.metadata.version("crc32c")` for its `__version__`, which
imports importlib.metadata (email, zipfile, csv, ...) and scans every distribution on the
path: ~15 ms of a ~60 ms start-up floor (issue #12). The extension module next to it holds
the function; loaded by its file under its own name, it is the same code. Falls back to the
package when the layout differs (another crc32c release).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
from collections.abc import Callable
from typing import Any

_Crc = Callable[..., int]


def _load() -> _Crc:
    spec = importlib.util.find_spec("crc32c")  # finds the package, does not import it
    for location in (spec.submodule_search_locations or []) if spec else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(location, "_crc32c" + suffix)
            if not os.path.exists(path):
                continue
            loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
            ext_spec = importlib.util.spec_from_file_location("crc32c._crc32c", path,
                                                              loader=loader)
            if ext_spec is None:
                continue
            module: Any = importlib.util.module_from_spec(ext_spec)
            loader.exec_module(module)
            fn: _Crc = module.crc32c
            return fn
    import crc32c

    return crc32c.crc32c


crc32c = _load()
