"""Keyboard shortcuts for a Panel page: a tiny JSComponent listening on ``document``.

Panel has no page-wide key bindings. :class:`KeyboardShortcuts` adds one
``keydown`` listener to the document while it is on the page and sends each
key it is told to watch to Python, where :attr:`KeyboardShortcuts.on_key` is
called with the key's name (``"ArrowRight"``, ``" "``, ``"g"`` ...). Keys
typed into inputs, text areas, selects and editable elements are left alone,
and so are keys with Ctrl, Alt or Meta.

A key travels as a change of two synchronised parameters (``key``, then the
counter ``pressed``) rather than as a custom message: Panel runs custom
messages on the next tick of the server, and the changes they make then
reached the browser only with the next message.
"""

from __future__ import annotations

from collections.abc import Callable

import param
from panel.custom import JSComponent
from panel.io import hold

__all__ = ["KeyboardShortcuts"]


class KeyboardShortcuts(JSComponent):
    """Send the watched keys pressed anywhere on the page to Python.

    Parameters
    ----------
    keys : list of str
        ``KeyboardEvent.key`` values to watch (others keep their default
        browser behaviour).
    on_key : callable, optional
        Called with the key (str) in the session's thread (an attribute, not
        a parameter: it stays in Python).
    """

    keys = param.List(
        default=["ArrowLeft", "ArrowRight", " ", "Home", "End", "g"],
        item_type=str,
        doc="KeyboardEvent.key values to send to Python.",
    )
    key = param.String(default="", doc="The last watched key pressed.")
    pressed = param.Integer(default=0, doc="How many watched keys were pressed.")

    # Panel waits this long (ms) to batch changes from the browser; a key
    # should act at once.
    _debounce = 0

    _esm = """
    const EDITABLE = new Set(["INPUT", "TEXTAREA", "SELECT"]);

    function typing(event) {
      const path = event.composedPath ? event.composedPath() : [event.target];
      for (const node of path) {
        if (!node || !node.tagName) continue;
        if (EDITABLE.has(node.tagName) || node.isContentEditable) return true;
      }
      return false;
    }

    export function render({ model, el }) {
      const handler = (event) => {
        if (event.ctrlKey || event.altKey || event.metaKey) return;
        if (!model.keys.includes(event.key) || typing(event)) return;
        event.preventDefault();
        event.stopPropagation();
        model.key = event.key;
        model.pressed = model.pressed + 1;
      };
      document.addEventListener("keydown", handler, true);
      model.on("remove", () => document.removeEventListener("keydown", handler, true));
      el.style.display = "none";
    }
    """

    def __init__(self, on_key: Callable[[str], None] | None = None, **params):
        params.setdefault("height", 0)
        params.setdefault("width", 0)
        params.setdefault("margin", 0)
        super().__init__(**params)
        self.on_key = on_key
        self.param.watch(self._pressed, "pressed")

    def press(self, key: str) -> None:
        """Act as if ``key`` was pressed in the page (tests, scripted demos)."""
        self.key = key
        self.pressed += 1

    def _pressed(self, event) -> None:
        if self.key in self.keys and self.on_key is not None:
            with hold():  # every change the key makes leaves in one batch
                self.on_key(self.key)
