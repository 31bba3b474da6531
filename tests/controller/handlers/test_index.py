"""The handler index (controller/handlers/_index.py) is what the handler modules give: a server answers
ApiVersions from it without importing a handler, so a stale index would advertise the wrong versions."""

from __future__ import annotations

import importlib

from controller.handlers import load_handlers
from controller.handlers.index import INDEX_FILE, generate


def test_the_index_is_current() -> None:
    assert INDEX_FILE.read_text(encoding="utf-8") == generate(), "run: python -m controller.handlers.index"


def test_a_handler_loads_its_module_at_first_use_and_takes_what_it_defines() -> None:
    handlers = load_handlers()
    for key, handler in handlers.items():
        module = importlib.import_module(handler.module)
        assert module.API_KEY == key
        assert (handler.min_version, handler.max_version) == tuple(module.VERSIONS)
        assert handler.handle is module.handle
        assert handler.error_response is getattr(module, "error_response", None)
        assert handler.decode is getattr(module, "decode", None)
