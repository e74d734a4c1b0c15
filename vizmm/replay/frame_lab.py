"""The barrier lab's aspect of a frame: which reads were wrong, who ran ahead (Section 5.4).

A trace with read records (``trace.shared_reads``) says what each thread
found in Mds and Nds at each ``k``. :func:`block_lab` judges a block's reads
once (against the book's kernel, or for a kernel of the user's own against
the P element each accumulator was stored into); :func:`lab_marks` gives a
step's fields of :class:`~vizmm.replay.frame.Frame` (the ``lab`` aspect:
``mds_wrong`` ... ``thread_terms``), :func:`own_caption` what a user
kernel's caption adds. NumPy only.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..analysis import hazards as hz
from ..trace.units import format_value
from .frame import ASPECT_FIELDS, aspect_maker
from .own import OwnBlock
from .states import Step, Sub
from .table import own_kernel

if TYPE_CHECKING:
    from .block import Replay
    from .frame_aspects import At

__all__ = ["SlotFound", "block_lab", "lab_marks", "own_caption"]


def block_lab(r: Replay) -> dict | None:
    """The block's recorded reads and which of them were wrong (None without reads).

    What the ``lab`` aspect marks at each step (``Replay._lab`` keeps it):
    the reads' tags, values and the book's, which were wrong, the wrong P
    elements, the book's Pvalue and who ran ahead at each ``(phase, k)``.

    Parameters
    ----------
    r : Replay
        The block replay.
    """
    tr = r.trace
    if r._own is not None and tr.shared_reads.size:
        return _own_lab(r, r._own)
    if own_kernel(tr):  # a user kernel not read as M, N and P: no book's judgement
        return None
    mask = hz.wrong_read_mask(tr)
    if mask is None:  # no read records
        return None
    wrong = mask[r.slot]  # (nph, T, T, T, 2)
    return {
        "tags": tr.shared_reads[r.slot],
        "values": tr.read_values[r.slot],
        "expected": hz.book_reads(tr)[r.slot],
        "wrong": wrong,
        "p_wrong": hz.wrong_p(tr),
        "p_book": hz.book_p(tr)[r.slot],
        "ahead": _ahead_by_step(hz.ran_ahead(tr), r.block, tr.shape),
    }


def _own_lab(r: Replay, own: OwnBlock) -> dict:
    """:func:`block_lab` of a user kernel: its reads judged against its own P elements.

    A factor is wrong where it is not the book's factor of the element its
    accumulator was stored into (:class:`vizmm.replay.own.OwnTerm`), not
    where it differs from Fig. 5.9's thread ``(ty, tx)``; which barrier
    is missing is not assumed (no "ran ahead" marks). ``raced`` /
    ``after_store``: the read's slot was stored by another thread in the
    same barrier epoch (and the read found that store's element).
    """
    tr = r.trace
    j, _k, l, T = r._dims
    shape = (tr.n_phases, T, T, T, 2)
    tags = np.full(shape, hz.TAG_NOT_RECORDED, np.int64)
    expected = np.full(shape, hz.TAG_NOT_RECORDED, np.int64)
    values = np.full(shape, np.nan, np.float32)
    wrong = np.zeros(shape, bool)
    raced = np.zeros(shape, bool)
    after = np.zeros(shape, bool)
    at_k: dict = defaultdict(list)  # (phase, ty, tx, k) -> every term there
    for (ty, tx), terms in own.terms.items():
        for t in terms:
            if not (0 <= t.phase < tr.n_phases and 0 <= t.k < T):
                continue
            at = (t.phase, ty, tx, t.k)
            at_k[at].append(t)
            if tags[at][0] == hz.TAG_NOT_RECORDED:  # a coarsened thread's first term
                tags[at], expected[at] = t.tags, t.book
                values[at] = t.factors
            wrong[at] |= t.wrong
            raced[at] |= np.array(t.raced) & np.array(t.wrong)
            after[at] |= np.array(t.after_store) & np.array(t.wrong)
    ref = np.asarray(tr.M, np.float64) @ np.asarray(tr.N, np.float64)
    p_wrong = np.zeros((j, l), bool)
    for got in own.stores.values():
        for row, col, v in got:
            p_wrong[row, col] |= not np.isclose(v, ref[row, col], rtol=1e-6, atol=0.0)
    pe = r._p_element
    ok = (pe[..., 0] >= 0) & (pe[..., 0] < j) & (pe[..., 1] >= 0) & (pe[..., 1] < l)
    p_book = np.where(ok, ref[np.clip(pe[..., 0], 0, j - 1), np.clip(pe[..., 1], 0, l - 1)], np.nan)
    return {
        "tags": tags,
        "values": values,
        "expected": expected,
        "wrong": wrong,
        "raced": raced,
        "after": after,
        "p_wrong": p_wrong,
        "p_book": p_book.astype(np.float32),
        "ahead": {},
        "terms": dict(at_k),
    }


def own_caption(r: Replay, step: Step) -> str:
    """What a user kernel's wrong reads at this step were, in the book's terms.

    Per thread with a wrong factor (a term not of the P element its
    accumulator was stored into): read a slot before another thread
    stored into it, or after another thread overwrote it, with no
    ``__syncthreads()`` between the store and the read (a race); else a
    wrong term (the kernel stores or reads its tiles at other places).

    Parameters
    ----------
    r : Replay
        The replay of a user kernel's block.
    step : Step
        The step the caption is for.
    """
    lab = r._lab
    if lab is None:
        return ""
    T = r.trace.tile_width
    ks = [step.k] if step.sub == Sub.K else range(T) if step.sub == Sub.PHASE else []
    if not ks or "raced" not in lab:
        return ""
    ph = step.phase
    wrong = lab["wrong"][ph][:, :, list(ks)]  # (ty, tx, k, 2)
    raced = lab["raced"][ph][:, :, list(ks)]
    after = lab["after"][ph][:, :, list(ks)]
    before_store = (raced & ~after).any(axis=(2, 3))
    overwritten = after.any(axis=(2, 3))
    other = (wrong & ~raced).any(axis=(2, 3))

    def threads(n: int) -> str:
        return f"{n} thread{'s' if n > 1 else ''}"

    out = []
    if before_store.any():
        out.append(
            f"{threads(int(before_store.sum()))} read a slot before it was stored (no "
            "barrier between the store and the read)."
        )
    if overwritten.any():
        out.append(
            f"{threads(int(overwritten.sum()))} read a slot after another thread "
            "overwrote it (no barrier between the store and the read)."
        )
    if other.any():
        out.append(
            f"{threads(int(other.sum()))} multiplied an element that is not a term of "
            f"the P element {'they compute' if other.sum() > 1 else 'it computes'} "
            "(a wrong term)."
        )
    return "".join(" " + x for x in out)


@aspect_maker
def lab_marks(r: Replay, at: At) -> dict:
    """The ``lab`` aspect: the barrier lab's fields of a frame (see :class:`Frame`)."""
    step = at.step
    lab = r._lab
    if lab is None:  # no barrier lab: every field None
        return dict.fromkeys(ASPECT_FIELDS["lab"])
    T = r.trace.tile_width
    j, k_dim, l = r.trace.shape
    mds_wrong = np.zeros((T, T), bool)
    nds_wrong = np.zeros((T, T), bool)
    thread_wrong = np.zeros((T, T), bool)
    notes: dict = {}
    thread_ahead = np.zeros((T, T), bool)
    ahead_notes: dict = {}
    found: dict = {}
    # The reads of this k, or of every k of the phase at phase granularity.
    ks = [step.k] if step.sub == Sub.K else range(T) if step.sub == Sub.PHASE else []
    own_terms = lab.get("terms")
    terms_said: dict = {}
    for k in ks:
        ph = step.phase
        w = lab["wrong"][ph, :, :, k]  # (ty, tx, 2)
        thread_wrong |= w.any(axis=-1)
        mds_wrong[:, k] |= w[:, :, 0].any(axis=1)
        nds_wrong[k, :] |= w[:, :, 1].any(axis=0)
        if own_terms is not None:  # a user kernel: every term of this k, each judged
            _own_marks(r, own_terms, ph, k, notes, found, terms_said)
            continue
        for ty, tx in zip(*np.nonzero(w.any(axis=-1)), strict=True):
            for a, (name, ncols) in enumerate((("Mds", k_dim), ("Nds", l))):
                if w[ty, tx, a]:
                    got = int(lab["tags"][ph, ty, tx, k, a])
                    want = int(lab["expected"][ph, ty, tx, k, a])
                    here = _slot_found(
                        (int(ty), int(tx)),
                        name,
                        ncols,
                        T,
                        got,
                        lab["values"][ph, ty, tx, k, a],
                        want,
                        hz.tag_value(r.trace, want, name),
                    )
                    _add_note(notes, here.reader, here.words)
                    slot = (name, int(ty), k) if a == 0 else (name, k, int(tx))
                    if slot not in found or here.reader == r.focus:
                        found[slot] = here
        for who, note in lab["ahead"].get((ph, k), ()):
            thread_ahead[who] = True
            _add_note(ahead_notes, who, note)
    p_wrong = p_book = None
    if step.sub == Sub.WRITE_P:
        p_wrong, p_book = lab["p_wrong"].copy(), lab["p_book"]
    return {
        "mds_wrong": mds_wrong,
        "nds_wrong": nds_wrong,
        "thread_wrong": thread_wrong,
        "wrong_notes": notes,
        "slot_found": found,
        "p_wrong": p_wrong,
        "p_book": p_book,
        "thread_ahead": thread_ahead,
        "ahead_notes": ahead_notes,
        "thread_terms": terms_said if own_terms is not None and step.sub == Sub.K else None,
    }


def _own_marks(r: Replay, terms: dict, ph, k, notes, found, said) -> None:
    """A user kernel's notes at one k: every term of each thread there, not the first.

    A coarsened thread adds one term per accumulator at each ``k``; each
    wrong factor of each gets its note (which P element it was for, what
    the read found, what that element's term needs) and its slot's
    :class:`SlotFound`; ``said`` gets every term in the book's words.
    """
    T = r.trace.tile_width
    _, k_dim, l = r.trace.shape
    for ty in range(T):
        for tx in range(T):
            for t in terms.get((ph, ty, tx, k), ()):
                el = f"P_{{{t.element[0]},{t.element[1]}}}"
                used = "·".join(
                    hz.describe_tag(t.tags[a], name, (k_dim, l)[a])
                    for a, name in enumerate(("Mds", "Nds"))
                )
                _add_note(said, (ty, tx), f"{el} += {used}")
                for a, name in enumerate(("Mds", "Nds")):
                    if not t.wrong[a]:
                        continue
                    want = int(t.book[a])
                    here = _slot_found(
                        (ty, tx),
                        name,
                        (k_dim, l)[a],
                        T,
                        int(t.tags[a]),
                        t.factors[a],
                        want,
                        hz.tag_value(r.trace, want, name),
                        element=t.element,
                    )
                    _add_note(notes, (ty, tx), here.words)
                    slot = (name, int(t.slots[a][0]), int(t.slots[a][1]))
                    if slot not in found or here.reader == r.focus:
                        found[slot] = here


class SlotFound(NamedTuple):
    """What one racing read found in a shared slot (barrier lab, Section 5.4).

    Attributes
    ----------
    reader : (ty, tx)
        The reading thread.
    tag : int
        What it found: the linear index of an M / N element, or a ``TAG_*``
        of :mod:`vizmm.analysis.hazards` (zero-fill, never written).
    element : (row, col) or None
        The element of M (Mds) or N (Nds) the tag names; None for a sentinel.
    value : float
        The value the thread read (recorded).
    expected : int
        The tag the book's kernel finds there.
    expected_value : float
        That element's value (NaN: none, a slot never written).
    words : str
        ``"read M_{0,2} = 5 (phase 1) where the book's kernel reads M_{0,0} = 8"``.
    """

    reader: tuple[int, int]
    tag: int
    element: tuple[int, int] | None
    value: float
    expected: int
    expected_value: float
    words: str


def _slot_found(reader, array: str, ncols: int, T: int, got, value, want, want_value, element=None):
    """The :class:`SlotFound` of a racing read (``array`` 'Mds' or 'Nds').

    With ``element`` (a user kernel's term's P element) the words name it and
    its term instead of the book's kernel.
    """
    seen = hz.describe_tag(got, array, ncols)
    book = hz.describe_tag(want, array, ncols)
    phase = _tag_phase(got, 0 if array == "Mds" else 1, ncols, T)
    when = f" (phase {phase})" if phase is not None else ""
    held = _equals(value) if got >= -1 else f" (it held {format_value(value)})"
    words = f"read {seen}{held}{when} where the book's kernel reads {book}{_equals(want_value)}"
    if element is not None:
        words = (
            f"for P_{{{element[0]},{element[1]}}} read {seen}{held}{when} where its term "
            f"needs {book}{_equals(want_value)}"
        )
    element = divmod(int(got), ncols) if got >= 0 else None
    return SlotFound(reader, int(got), element, float(value), int(want), want_value, words)


def _equals(v: float) -> str:
    """`` = 5`` for a value, nothing for NaN (no value to name)."""
    return f" = {format_value(v)}" if v == v else ""


def _add_note(notes: dict, who: tuple[int, int], note: str) -> None:
    """Add ``note`` to a thread's notes (several joined by "; ")."""
    notes[who] = f"{notes[who]}; {note}" if who in notes else note


def _ahead_by_step(rows: np.ndarray, block: tuple[int, int], shape) -> dict:
    """``{(phase, k): [((ty, tx), note), ...]}``: who ran ahead at each k step of ``block``.

    ``rows`` are :func:`vizmm.analysis.hazards.ran_ahead`'s; the notes say it
    in the book's words (see :attr:`Frame.ahead_notes`).
    """
    _, k_dim, l = shape
    out: dict = {}
    sel = (rows["block"][:, 0] == block[0]) & (rows["block"][:, 1] == block[1])
    for r in rows[sel]:
        array = str(r["array"])
        ncols = k_dim if array == "Mds" else l
        slot = f"{array}[{r['slot'][0]}][{r['slot'][1]}]"
        reader = f"thread ({r['reader'][0]},{r['reader'][1]})"
        writer = f"thread ({r['writer'][0]},{r['writer'][1]})"
        ph, fp, ep = int(r["phase"]), int(r["found_phase"]), int(r["expected_phase"])
        want = hz.describe_tag(int(r["expected"]), array, ncols)
        got = hz.describe_tag(int(r["tag"]), array, ncols)
        if str(r["kind"]) == "RAW":
            seen = "a slot not written yet" if fp < 0 else f"phase {fp}'s {got}"
            note = (
                f"{reader} ran ahead: it read {slot} in phase {ph} before {writer} had stored "
                f"phase {ep}'s {want} there, and found {seen}"
            )
        else:
            note = (
                f"{writer} had already loaded phase {fp}'s {got} into {slot} while {reader} "
                f"still needed phase {ep}'s {want}"
            )
        who = (int(r["ahead"][0]), int(r["ahead"][1]))
        out.setdefault((ph, int(r["k"])), []).append((who, note))
    return out


def _tag_phase(tag: int, array: int, ncols: int, T: int) -> int | None:
    """The phase whose tile holds the element of ``tag`` (M: its column, N: its row)."""
    if tag < 0:
        return None
    row, col = divmod(tag, ncols)
    return (col if array == 0 else row) // T
