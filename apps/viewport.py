"""The browser window's size, sent to Python: a tiny JSComponent.

Panel's ``BrowserInfo`` says nothing of the window's size. :class:`Viewport`
reports ``window.innerWidth`` and ``innerHeight`` when the page loads and,
a quarter of a second after the last ``resize`` event, when the window
changes, so that presenter mode can size its scene to the screen.
"""

from __future__ import annotations

import param

from vizmm_apps.parts import PageScript

__all__ = ["Viewport"]


class Viewport(PageScript):
    """The size of the browser window the page is shown in (CSS pixels).

    Attributes
    ----------
    inner_width, inner_height : int
        ``window.innerWidth`` and ``innerHeight``; 0 until the page has
        loaded and said.
    """

    inner_width = param.Integer(default=0, bounds=(0, None), doc="window.innerWidth, CSS px")
    inner_height = param.Integer(default=0, bounds=(0, None), doc="window.innerHeight, CSS px")

    _script = """
    function setup({ model }) {
      let timer = null;
      const say = () => {
        timer = null;
        if (model.inner_width !== window.innerWidth || model.inner_height !== window.innerHeight) {
          model.inner_width = window.innerWidth;
          model.inner_height = window.innerHeight;
        }
      };
      const later = () => {
        if (timer !== null) clearTimeout(timer);
        timer = setTimeout(say, 250);
      };
      say();
      window.addEventListener("resize", later);
      model.on("remove", () => window.removeEventListener("resize", later));
    }
    """
