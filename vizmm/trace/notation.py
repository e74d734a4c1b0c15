"""The book's notation for one element of a matrix, written once for every layer.

PMPP ch. 5 names an element by its matrix and subscripts: ``M_{0,2}`` is
M's row 0, column 2 (Fig. 5.8's table), ``Mds_{1,0}`` a slot of the tile in
shared memory. The Fig. 5.8 table, the questions, the findings, the replay
of a kernel of one's own and the Bokeh scene's labels all write it with
:func:`subscript`, so they write it alike.
"""

from __future__ import annotations

__all__ = ["subscript"]


def subscript(name: str, row: int, col: int) -> str:
    """``name`` with the subscripts ``row,col``, as the book writes an element.

    Parameters
    ----------
    name : str
        The matrix or tile: ``'M'``, ``'N'``, ``'P'``, ``'Mds'``, ``'Nds'``.
    row, col : int
        The element's row and column (0-based, as in the book's figures).

    Returns
    -------
    str
        ``'M_{0,2}'`` for ``subscript('M', 0, 2)``.
    """
    return f"{name}_{{{row},{col}}}"
