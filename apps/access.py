"""What every page needs to be usable by keyboard and screen reader, in either theme.

* :func:`page_extension`: every page's ``pn.extension`` call, with
  :func:`page_css`: CSS for ``pn.extension(raw_css=...)``, which Panel puts
  into every component's stylesheets (each has its own shadow root): a
  visible focus ring on whatever has the keyboard focus, the dark theme's
  tab labels and code in readable contrast (WCAG AA, 4.5:1).
* :class:`PageLandmarks`: an invisible component that gives the page its
  ``lang``, makes the page's root its main landmark, and names the slider
  handles (Panel's sliders draw a handle with ``role="slider"`` and no name)
  after their visible titles.
* :class:`BusySignal`: "Working…" the moment a slow button is pressed.
* :class:`Narration`: an ARIA live region (``role="status"``) whose text a
  screen reader reads when it changes; the dashboard puts each step's
  :func:`vizmm.replay.narration.narrate` there, where it also serves as
  captions on a projector.

Only Panel's public API: ``raw_css``, ``stylesheets`` and
``panel.custom.JSComponent``.
"""

from __future__ import annotations

import param
from panel.custom import JSComponent

from vizmm_apps.parts import PageScript

__all__ = [
    "BusySignal",
    "FOCUS_COLORS",
    "Narration",
    "PageLandmarks",
    "opened_theme",
    "page_css",
    "page_extension",
]

#: The focus ring's colour in each theme: 7.0:1 against white, 10.9:1 against
#: Panel's dark background ``#212529``.
FOCUS_COLORS = {"light": "#0b4fb3", "dark": "#ffd43b"}

_COMMON_CSS = """
:focus-visible, .bk-btn:focus-visible, .noUi-handle:focus-visible,
.bk-input:focus-visible, .bk-tab:focus-visible {
  outline: 3px solid %(focus)s !important;
  outline-offset: 2px !important;
}
"""

_DARK_CSS = """
.bk-header .bk-tab { color: #dee2e6 !important; }
.bk-header .bk-tab.bk-active {
  color: #ffffff !important;
  background-color: #343a40 !important;
  border-color: #adb5bd !important;
  border-bottom: 3px solid %(focus)s !important;
}
.markdown code, code { color: #e6edf3 !important; background-color: #30363d !important; }
a:link { color: #8ab4f8; }
a:visited { color: #c58af9; }
"""

_LIGHT_CSS = """
.markdown code, code { color: #1f2328 !important; background-color: #eff1f3 !important; }
"""


def opened_theme() -> str:
    """The theme this page was opened in: ``'dark'`` (Panel's ``?theme=dark``) or ``'light'``."""
    import panel as pn

    return "dark" if pn.config.theme == "dark" else "light"


def page_css(theme: str = "light") -> list[str]:
    """The CSS a page passes to ``pn.extension(raw_css=...)`` for ``theme``.

    Parameters
    ----------
    theme : {'light', 'dark'}
        The theme the page was opened in (``pn.config.theme``; Panel's
        ``?theme=dark``).

    Returns
    -------
    list of str
        One CSS text.

    Raises
    ------
    ValueError
        For a theme other than light or dark.
    """
    if theme not in FOCUS_COLORS:
        raise ValueError(f"theme must be 'light' or 'dark', got {theme!r}")
    values = {"focus": FOCUS_COLORS[theme]}
    extra = _DARK_CSS if theme == "dark" else _LIGHT_CSS
    return [(_COMMON_CSS + extra) % values]


class PageLandmarks(PageScript):
    """Give the page ``lang``, a main landmark and named slider handles (invisible).

    Put one in each page's layout. In the browser it sets ``lang`` on
    ``<html>`` where none is set, ``role="main"`` on the page's outermost
    element (where the page has no main landmark yet), and an
    ``aria-label`` on every ``role="slider"`` handle without a name: its
    slider's visible title ("step", "TILE_WIDTH"), looked for again every
    :attr:`rescan_ms` milliseconds for sliders shown later (tabs made when
    first opened).

    Parameters
    ----------
    lang : str
        The page's language (BCP 47).
    rescan_ms : int
        Milliseconds between looks for new unnamed sliders.
    """

    lang = param.String(default="en")
    rescan_ms = param.Integer(default=1500, bounds=(100, None))

    _script = """
    function* roots(root) {
      yield root;
      for (const node of root.querySelectorAll("*")) {
        if (node.shadowRoot) yield* roots(node.shadowRoot);
      }
    }

    function nameSliders() {
      for (const root of roots(document)) {
        for (const handle of root.querySelectorAll('[role="slider"]:not([aria-label])')) {
          const title = root.querySelector(".bk-slider-title");
          const text = title ? title.textContent.split(":")[0].trim() : "";
          handle.setAttribute("aria-label", text || "slider");
        }
      }
    }

    function setup({ model, el }) {
      if (!document.documentElement.lang) document.documentElement.lang = model.lang;
      let top = el;
      while (top.getRootNode() instanceof ShadowRoot) top = top.getRootNode().host;
      while (top.parentElement && top.parentElement !== document.body) top = top.parentElement;
      if (!document.querySelector('main, [role="main"]')) top.setAttribute("role", "main");
      nameSliders();
      const timer = setInterval(nameSliders, model.rescan_ms);
      model.on("remove", () => clearInterval(timer));
    }
    """


def page_extension(*extensions: str) -> None:
    """Load Panel for a page: ``extensions``, no notifications, the CSS of its opened theme.

    Parameters
    ----------
    *extensions : str
        Panel extensions the page needs besides (``TABLE_EXTENSIONS`` for a
        ``DataTable``).
    """
    import panel as pn

    pn.extension(*extensions, notifications=False, raw_css=page_css(opened_theme()))


class Narration(JSComponent):
    """Text read out by screen readers when it changes: an ARIA live region.

    The element (``<p id="vizmm-narration" role="status" aria-live="polite"
    aria-atomic="true">``) is made once and only its text changes, so
    assistive technology announces every new :attr:`text`.

    Parameters
    ----------
    text : str
        What to say (one step's narration).
    large : bool
        Caption size for a projector (presenter mode): 22 px instead of 15 px.
    """

    text = param.String(default="")
    large = param.Boolean(default=False)

    _esm = """
    export function render({ model, el }) {
      const p = document.createElement("p");
      p.id = "vizmm-narration";
      p.className = "vizmm-narration";
      p.setAttribute("role", "status");
      p.setAttribute("aria-live", "polite");
      p.setAttribute("aria-atomic", "true");
      const show = () => {
        p.textContent = model.text;
        p.style.fontSize = model.large ? "22px" : "15px";
      };
      show();
      model.on("text", show);
      model.on("large", show);
      el.appendChild(p);
    }
    """

    def __init__(self, **params):
        params.setdefault("stylesheets", [".vizmm-narration { margin: 2px 0; line-height: 1.35; }"])
        params.setdefault("sizing_mode", "stretch_width")
        params.setdefault("margin", (0, 10))
        super().__init__(**params)


class BusySignal(JSComponent):
    """Say "Working…" the moment a slow button is pressed, until Python says it is done.

    A click (or Enter, or space) on a button whose label is one of
    :attr:`labels` shows :attr:`message` at once in the browser, in a live
    region (``<span id="vizmm-busy" role="status">``), with ``aria-busy`` on
    the page and a progress cursor, before the server has even received the
    click; the server's work (a question on a big trace can take seconds)
    then ends with :meth:`done_now`, which hides it.

    Parameters
    ----------
    labels : list of str
        The labels of the buttons whose work may take a while.
    message : str
        What the page says meanwhile.
    """

    labels = param.List(default=[], item_type=str)
    message = param.String(default="Working…")
    done = param.Integer(default=0, doc="Bumped by Python when the work is done.")

    _esm = """
    export function render({ model, el }) {
      const p = document.createElement("span");
      p.id = "vizmm-busy";
      p.setAttribute("role", "status");
      p.setAttribute("aria-live", "polite");
      p.style.display = "none";
      p.style.fontWeight = "bold";
      el.appendChild(p);
      const root = document.documentElement;
      const on = (event) => {
        for (const node of event.composedPath()) {
          if (node.tagName === "BUTTON" && model.labels.includes(node.textContent.trim())) {
            p.textContent = "⏳ " + model.message;
            p.style.display = "";
            root.setAttribute("aria-busy", "true");
            root.style.cursor = "progress";
            return;
          }
        }
      };
      const off = () => {
        p.style.display = "none";
        p.textContent = "";
        root.removeAttribute("aria-busy");
        root.style.cursor = "";
      };
      document.addEventListener("click", on, true);
      model.on("done", off);
      model.on("remove", () => document.removeEventListener("click", on, true));
    }
    """

    def __init__(self, **params):
        params.setdefault("margin", (12, 10, 0, 10))
        super().__init__(**params)

    def done_now(self) -> None:
        """The work is done: hide the message."""
        self.done += 1
