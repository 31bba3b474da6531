"""Finds the project's ``schemas/`` folder, installed or editable, through importlib.resources."""

from __future__ import annotations

import importlib
import importlib.resources
import logging
from importlib.resources.abc import Traversable
from pathlib import Path

log = logging.getLogger(__name__)

SCHEMAS_PACKAGE = "schemas"


def project_schemas() -> Traversable:
    """The ``schemas`` package data: the project's spec files and ``errors.json``."""
    try:
        root = importlib.resources.files(SCHEMAS_PACKAGE)
        if root.is_dir():
            return root
    except (NotADirectoryError, TypeError) as exc:
        # Python 3.11's resource reader fails on a namespace package whose __path__ holds an
        # editable-install path hook; its real folders are still listed in __path__.
        log.debug("importlib.resources cannot open %s (%s); scanning its __path__", SCHEMAS_PACKAGE, exc)
    package = importlib.import_module(SCHEMAS_PACKAGE)
    for entry in getattr(package, "__path__", []):
        folder = Path(entry)
        if folder.is_dir():
            return folder
    raise FileNotFoundError(f"the {SCHEMAS_PACKAGE!r} package has no folder with spec files")
