"""The pages of this process that follow each class: woken at once when the class changes.

A class lives in the class store (:mod:`vizmm.serve.classes`), shared by the
server's processes; every page of a class also polls it on a timer. When a
change is made in this process, the pages of this process that follow the
class need not wait for their timers: :meth:`PageListeners.wake` calls each
one's ``wake`` at once. What ``wake`` does (schedule an update in the page's
own document) is the page's business: nothing here knows Bokeh or Panel.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Hashable

__all__ = ["CLASS_PAGES", "PageListeners"]


class PageListeners:
    """Pages of this process, by class code: ``code -> {key: wake}``.

    Thread-safe. A page listens while it is open and stops when it closes;
    a class with no page left is forgotten.
    """

    def __init__(self) -> None:
        self._pages: dict[str, dict[Hashable, Callable[[], object]]] = {}
        self._lock = threading.Lock()

    def listen(self, code: str, key: Hashable, wake: Callable[[], object]) -> None:
        """Wake ``wake()`` whenever class ``code`` changes in this process.

        Parameters
        ----------
        code : str
            The class's code.
        key : hashable
            The page (one entry per key: listening again replaces it).
        wake : callable
            Called with no arguments, in the thread that made the change; it
            should only schedule the page's update.
        """
        with self._lock:
            self._pages.setdefault(code, {})[key] = wake

    def unlisten(self, code: str, key: Hashable) -> None:
        """Stop waking page ``key`` of class ``code`` (nothing if it was not listening).

        Parameters
        ----------
        code : str
            The class's code.
        key : hashable
            The page.
        """
        with self._lock:
            pages = self._pages.get(code)
            if pages is not None:
                pages.pop(key, None)
                if not pages:
                    del self._pages[code]

    def wake(self, code: str) -> int:
        """Call every listening page's ``wake`` of class ``code``; a failing one is skipped.

        Parameters
        ----------
        code : str
            The class's code.

        Returns
        -------
        int
            The pages woken.
        """
        wakes = self._wakes(code)
        for wake in wakes:
            with contextlib.suppress(Exception):  # a page closing at this moment
                wake()
        return len(wakes)

    def count(self, code: str) -> int:
        """How many pages of this process :meth:`wake` would wake for class ``code``.

        Parameters
        ----------
        code : str
            A class code.
        """
        return len(self._wakes(code))

    def _wakes(self, code: str) -> list[Callable[[], object]]:
        with self._lock:
            return list(self._pages.get(code, {}).values())


#: The process's pages in each class.
CLASS_PAGES = PageListeners()
