"""The caches a server process keeps for its pages: one registry, every entry bounded.

Three kinds of thing are kept between pages, and each has one bound:

* **traces**: :data:`vizmm.serve.catalogue.CATALOGUE` (bounded in bytes);
* **what is worked out from one trace** (a block's Fig. 5.8 table and its
  layout, a matrix grid's fixed columns, the large view's model, the barrier
  lab's findings): kept on the trace itself by
  :func:`vizmm.trace.derived.per_trace`, a few per function, so it goes when
  the catalogue lets the trace go (no cache here is keyed on a trace, which
  would keep the trace alive past the catalogue's bound);
* **what pages drew** (labels, value texts, colours, the steps the scenes
  share): the ``functools`` caches of the modules named in
  :data:`DRAWING_CACHE_MODULES` (each with a ``maxsize``) and the objects of
  :data:`DRAWING_CACHE_OBJECTS` (:data:`vizmm.render.shared_steps.STEPS`,
  bounded in bytes). They are filled among a page's own objects, so they are
  dropped when no page is left (:func:`vizmm.serve.memory.release_memory`).

:data:`CACHES` is that registry. It names modules rather than importing
them: this layer draws nothing (no Bokeh, Panel, Pillow nor
:mod:`vizmm.render`), and a module not imported in this process has nothing
to drop.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["DRAWING_CACHE_MODULES", "DRAWING_CACHE_OBJECTS", "CacheRegistry", "CACHES"]

#: Modules whose ``functools`` caches hold what pages drew.
DRAWING_CACHE_MODULES: tuple[str, ...] = (
    "vizmm.render.bokeh_scene",
    "vizmm.render.columns",
    "vizmm.render.views.text",
    "vizmm.render.palette",
    "vizmm.trace.units",
)

#: ``(module, name)`` of other caches of what pages drew (objects with
#: ``clear()`` and ``len()``).
DRAWING_CACHE_OBJECTS: tuple[tuple[str, str], ...] = (("vizmm.render.shared_steps", "STEPS"),)


class CacheRegistry:
    """The process's caches of what pages drew, listed by name, emptied together.

    Parameters
    ----------
    modules : tuple of str
        Modules whose ``functools`` caches (``lru_cache`` with a ``maxsize``)
        are registered: every function of the module with ``cache_info`` and
        ``cache_clear``.
    objects : tuple of (str, str)
        ``(module, attribute)`` of other caches: objects with ``clear()`` and
        ``len()``.
    """

    def __init__(
        self, modules: tuple[str, ...] = (), objects: tuple[tuple[str, str], ...] = ()
    ) -> None:
        self.modules = tuple(modules)
        self.objects = tuple(objects)

    def functools_caches(self) -> Iterator[tuple[str, Any]]:
        """``(qualified name, function)`` of every registered ``functools`` cache now loaded."""
        for name in self.modules:
            module = sys.modules.get(name)
            for attr, obj in vars(module).items() if module is not None else ():
                if callable(getattr(obj, "cache_info", None)) and callable(
                    getattr(obj, "cache_clear", None)
                ):
                    yield f"{name}.{attr}", obj

    def _objects(self) -> Iterator[Any]:
        for module_name, attr in self.objects:
            module = sys.modules.get(module_name)
            if module is not None and hasattr(module, attr):
                yield getattr(module, attr)

    def entries(self) -> int:
        """Entries held now, in all the registered caches together.

        Returns
        -------
        int
            The sum of the ``functools`` caches' ``currsize`` and the other
            objects' ``len()``.
        """
        total = sum(f.cache_info().currsize for _, f in self.functools_caches())
        return total + sum(len(o) for o in self._objects())

    def unbounded(self) -> list[str]:
        """Registered ``functools`` caches without a ``maxsize`` (there should be none).

        Returns
        -------
        list of str
            Their qualified names.
        """
        return [n for n, f in self.functools_caches() if f.cache_info().maxsize is None]

    def clear(self) -> int:
        """Empty every registered cache; the entries dropped.

        Returns
        -------
        int
            How many entries there were.
        """
        dropped = 0
        for obj in self._objects():
            dropped += len(obj)
            obj.clear()
        for _, func in self.functools_caches():
            dropped += func.cache_info().currsize
            func.cache_clear()
        return dropped


#: The process's one registry of drawing caches.
CACHES = CacheRegistry(DRAWING_CACHE_MODULES, DRAWING_CACHE_OBJECTS)
