"""Keyboard shortcuts for a Panel page: a tiny JSComponent listening on ``document``.

Panel has no page-wide key bindings. :class:`KeyboardShortcuts` adds one
``keydown`` listener to the document while it is on the page and sends each
key it is told to watch to Python, where :attr:`KeyboardShortcuts.on_key` is
called with the key's name (``"ArrowRight"``, ``" "``, ``"g"`` ...). Keys
typed into inputs, text areas, selects and editable elements are left alone,
and so are keys with Ctrl, Alt or Meta, the keys a focused control acts on
itself (←/→/Home/End on a slider, a tab, a menu; space on a button or a link):
the keyboard alone then moves a slider or presses a button as everywhere.

Keys travel in one synchronised parameter, ``queue``: the last
:data:`QUEUE_LENGTH` keys pressed, each with its sequence number; Python acts
on every entry newer than the last it handled, in order. (A key sent as a
change of ``key`` and of the counter ``pressed`` could be lost: while the
server is busy, say building the presenter's scene after a ``p``, Panel keeps
only the newest value of each property that arrives, so two quick ``p``
presses arrived as one change of ``pressed`` and toggled once. Custom messages
are no better: Panel runs them on the next tick of the server, and the changes
they make then reached the browser only with the next message.)
"""

from __future__ import annotations

from collections.abc import Callable

import param
from panel.io import hold

from vizmm_apps.parts import PageScript

__all__ = ["KeyboardShortcuts", "PageTheme", "QUEUE_LENGTH"]

#: Keys the browser keeps in :attr:`KeyboardShortcuts.queue` (presses the
#: server may fall behind by and still act on, each of them).
QUEUE_LENGTH = 64


class KeyboardShortcuts(PageScript):
    """Send the watched keys pressed anywhere on the page to Python.

    Parameters
    ----------
    keys : list of str
        ``KeyboardEvent.key`` values to watch (others keep their default
        browser behaviour).
    on_key : callable, optional
        Called with the key (str) in the session's thread (an attribute, not
        a parameter: it stays in Python).

    Attributes
    ----------
    key : str
        The last key acted on (``""``: none yet).
    pressed : int
        Sequence number of the last key acted on (0: none yet).

    Notes
    -----
    ``key`` and ``pressed`` are plain attributes, not parameters: the page's
    script numbers a new key from the queue alone, so nothing of them needs
    to travel back. As synchronised parameters they cost the server a patch
    of their own on every key press (about a sixth of a step's work).
    """

    keys = param.List(
        default=["ArrowLeft", "ArrowRight", " ", "Home", "End", "g"],
        item_type=str,
        doc="KeyboardEvent.key values to send to Python.",
    )
    queue = param.List(
        default=[],
        doc="The last watched keys pressed, oldest first, as [sequence number, key] pairs.",
    )

    # Panel waits this long (ms) to batch changes from the browser; a key
    # should act at once.
    _debounce = 0

    # A key press does not mark the server busy (``pn.state.busy``): its
    # work is one step, and the bookkeeping (two updates of Panel's busy list
    # and their watchers) cost the server about a tenth of a step's work, as
    # Panel's own layouts skip it for their scroll position.
    _busy__ignore = ["queue"]

    _script = """
    const EDITABLE = new Set(["INPUT", "TEXTAREA", "SELECT"]);
    // Controls that act on these keys themselves: a focused slider moves with
    // the arrows, Home and End; a focused button or link is pressed by space.
    const OWN_KEYS = new Set(["slider", "spinbutton", "combobox", "listbox", "option",
                              "textbox", "tab", "radio", "menuitem", "scrollbar"]);
    const PRESSED = new Set(["BUTTON", "A", "SUMMARY"]);

    function typing(event) {
      const path = event.composedPath ? event.composedPath() : [event.target];
      for (const node of path) {
        if (!node || !node.tagName) continue;
        if (EDITABLE.has(node.tagName) || node.isContentEditable) return true;
        if (OWN_KEYS.has(node.getAttribute("role"))) return true;
        if (event.key === " " && (PRESSED.has(node.tagName)
            || ["button", "checkbox", "switch", "link"].includes(node.getAttribute("role"))))
          return true;
      }
      return false;
    }

    const QUEUE_LENGTH = __QUEUE_LENGTH__;

    function setup({ model }) {
      const handler = (event) => {
        if (event.ctrlKey || event.altKey || event.metaKey) return;
        if (!model.keys.includes(event.key) || typing(event)) return;
        event.preventDefault();
        event.stopPropagation();
        const queue = model.queue.slice(-(QUEUE_LENGTH - 1));
        const last = queue.length ? queue[queue.length - 1][0] : 0;
        queue.push([last + 1, event.key]);
        model.queue = queue;  // one property: a newer value holds the older keys too
      };
      document.addEventListener("keydown", handler, true);
      model.on("remove", () => document.removeEventListener("keydown", handler, true));
    }
    """.replace("__QUEUE_LENGTH__", str(QUEUE_LENGTH))

    def __init__(self, on_key: Callable[[str], None] | None = None, **params):
        super().__init__(**params)
        self.on_key = on_key
        self.key, self.pressed = "", 0
        self.param.watch(self._queued, "queue")

    def press(self, key: str) -> None:
        """Act as if ``key`` was pressed in the page (tests, scripted demos).

        Parameters
        ----------
        key : str
            A ``KeyboardEvent.key`` value, e.g. ``'ArrowRight'``.
        """
        last = self.queue[-1][0] if self.queue else self.pressed
        seq = max(last, self.pressed) + 1
        self.queue = [*self.queue[-(QUEUE_LENGTH - 1) :], [seq, key]]

    def _queued(self, event) -> None:
        new = [(int(seq), str(key)) for seq, key in self.queue if int(seq) > self.pressed]
        for seq, key in new:
            self.key, self.pressed = key, seq
            if key in self.keys and self.on_key is not None:
                with hold():  # every change the key makes leaves in one batch
                    self.on_key(key)


class PageTheme(PageScript):
    """Open the page again in another theme when :attr:`theme` changes.

    Panel draws a served page's widgets in the theme the page was opened with
    (the ``theme`` URL query: ``?theme=dark``); this invisible component opens
    the same URL with the new ``theme`` when Python changes :attr:`theme`.
    """

    theme: param.Selector[str] = param.Selector(default="light", objects=["light", "dark"])

    _script = """
    function setup({ model }) {
      const opened = new URL(window.location.href).searchParams.get("theme") || "light";
      model.on("theme", () => {
        if (model.theme === opened) return;
        const url = new URL(window.location.href);
        url.searchParams.set("theme", model.theme);
        window.location.replace(url.toString());
      });
    }
    """
