"""A frame's shared-memory arrays by matrix, for every renderer.

:class:`~vizmm.replay.Frame` holds the two tiles' arrays as ``mds_*`` and
``nds_*`` fields (the transactions overlay, ``Frame.transactions``, likewise
``mds_bank`` and ``nds_bank`` ...); the renderers draw Mds and Nds with one
piece of code each and pick the arrays of the tile they draw here.
"""

from __future__ import annotations

__all__ = ["tile_arrays"]


def tile_arrays(obj, matrix: str, *names: str) -> list:
    """``obj.mds_<name>`` for each name if ``matrix`` is 'M', ``obj.nds_<name>`` if 'N'.

    Parameters
    ----------
    obj : Frame or TransactionsOverlay
        Anything with ``mds_*`` / ``nds_*`` fields.
    matrix : {'M', 'N'}
        The tile: Mds holds elements of M, Nds of N.
    *names : str
        Field names without the prefix (``'state'``, ``'src'``, ``'bank'`` ...).

    Returns
    -------
    list
        The fields' values (arrays of shape (T, T), or None where a field is optional).

    Raises
    ------
    ValueError
        For another matrix.
    """
    if matrix not in ("M", "N"):
        raise ValueError(f"matrix must be 'M' or 'N' (the tiles Mds, Nds), got {matrix!r}")
    prefix = "mds" if matrix == "M" else "nds"
    return [getattr(obj, f"{prefix}_{name}") for name in names]
