"""Numbers for people: the one byte formatter and the one value formatter of every layer.

Every view (dashboard, GIF/MP4 frames, HTML export, terminal table) prints
sizes with :func:`human_bytes` and matrix values with :func:`format_value`, so
they print the same number alike.
"""

import math
from collections.abc import Iterable, Sequence
from functools import lru_cache


def human_bytes(n: float) -> str:
    """A size in bytes for people: ``'512 B'``, ``'2.7 MiB'`` (powers of 1024).

    Parameters
    ----------
    n : float
        A size in bytes, 0 or more.
    """
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{int(n)} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


def human_duration(seconds: float) -> str:
    """A time for people, in the largest fitting unit: ``'40 s'``, ``'12 min'``, ``'3.5 h'``.

    Parameters
    ----------
    seconds : float
        A duration (s), at least 0.

    Returns
    -------
    str
        Seconds under two minutes (one decimal under 10 s), then minutes, hours,
        days and years (365 days), never a raw count of seconds past a minute.
    """
    s = max(0.0, float(seconds))
    if s < 10:
        return f"{s:.1f} s"
    if s < 120:
        return f"{s:.0f} s"
    for size, unit in ((31_536_000, "years"), (86_400, "days"), (3_600, "h"), (60, "min")):
        if s >= size or unit == "min":
            n = s / size
            if unit == "years" and n >= 1000:
                return f"{n:,.0f} years"
            return (f"{n:.1f}".removesuffix(".0") if n < 10 else f"{n:.0f}") + f" {unit}"
    return f"{s:.0f} s"  # pragma: no cover


def format_blocks(blocks: Iterable[Sequence[int]], limit: int = 8) -> str:
    """``"(0,0), (63,63), (127,0) … (9 in all)"``: at most ``limit`` blocks, then a count.

    Parameters
    ----------
    blocks : iterable of (int, int)
        (by, bx) pairs.
    limit : int
        The most blocks named.
    """
    blocks = [(int(b[0]), int(b[1])) for b in blocks]
    text = ", ".join(f"({a},{b})" for a, b in blocks[:limit])
    if len(blocks) > limit:
        text += f" … ({len(blocks)} in all)"
    return text or "none"


@lru_cache(maxsize=1 << 14)
def format_value(v: float, missing: str = "?") -> str:
    """A matrix value as the book writes it: ``'2'``, ``'-3'``, ``'0.5'``, ``'1.235e+07'``.

    Integers print without decimals (up to 1e9 in magnitude), other values
    with 4 significant digits.

    Parameters
    ----------
    v : float
        The value (float32 values arrive as Python floats).
    missing : str
        What NaN and infinities print as (a value not recorded).
    """
    v = float(v)
    if not math.isfinite(v):
        return missing
    if v == int(v) and abs(v) < 1e9:
        return str(int(v))
    return f"{v:.4g}"
