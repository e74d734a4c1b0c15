"""The dashboard's invisible scripts in one component: keys, theme, window size, landmarks.

Each component of a page is a pair of Bokeh models that a new session builds
and sends, and a page's four invisible scripts cost about as much as a row of
widgets. :class:`PageScripts` derives from the four
(:class:`~vizmm_apps.keys.KeyboardShortcuts`,
:class:`~vizmm_apps.keys.PageTheme`, :class:`~vizmm_apps.viewport.Viewport`,
:class:`~vizmm_apps.access.PageLandmarks`): it has all their parameters and
methods, and its ESM module runs the four classes' own scripts (see
:class:`~vizmm_apps.parts.PageScript`), so the page holds one pair of models.
"""

from __future__ import annotations

from vizmm_apps.access import PageLandmarks
from vizmm_apps.keys import KeyboardShortcuts, PageTheme
from vizmm_apps.viewport import Viewport

__all__ = ["PageScripts"]


class PageScripts(KeyboardShortcuts, PageTheme, Viewport, PageLandmarks):
    """Keyboard shortcuts, the theme's reload, the window's size and the landmarks, in one.

    It does what each of its four bases does on its own page: sends the
    watched keys to :attr:`on_key` (:meth:`press`, :attr:`queue`), opens the
    page again when :attr:`theme` changes, reports :attr:`inner_width` and
    :attr:`inner_height`, and gives the page ``lang``, its main landmark and
    named slider handles.

    Parameters
    ----------
    on_key : callable, optional
        Called with each watched key pressed (see ``KeyboardShortcuts``).
    **params
        The four's parameters: ``keys``, ``theme``, ``lang``, ``rescan_ms``
        and Panel's.
    """
