"""Loading a package of plugins: the filter and check registries import every module of their
package once, on first use, so that each module's decorators have registered what it defines."""

from __future__ import annotations

import importlib
import pkgutil
import threading
from pathlib import Path


class PackageModules:
    """Imports every module of one package, once, safely from several threads."""

    def __init__(self, package: str, folder: Path):
        self.package = package
        self.folder = folder
        self._lock = threading.Lock()
        self._loaded = False

    def load(self) -> None:
        if self._loaded:
            return
        with self._lock:
            if not self._loaded:
                for module in pkgutil.iter_modules([str(self.folder)]):
                    importlib.import_module(f"{self.package}.{module.name}")
                self._loaded = True
