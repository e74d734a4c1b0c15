"""The barrier lab shows values (issue 32, item 5): at a wrong read the number read
and the number the book's kernel reads, the right Pvalue beside a wrong one, the
hazard list with both, and the Mds / Nds picture showing what the racing thread
found.

Oracles, independent of the code under test: Fig. 5.9's indexing (thread (ty, tx)
of block (by, bx) at phase ph and k reads Mds[ty][k] = M[by*T + ty][ph*T + k] and
Nds[k][tx] = N[ph*T + k][bx*T + tx]), the matrices' own values, and NumPy's
M @ N (small integers: exact in float32).
"""

import re
from importlib import resources

import numpy as np
import pytest

import vizmm
from vizmm.render.bokeh_scene import frame_columns
from vizmm.replay import Replay, Sub

NOTE = re.compile(
    r"read ([MN])_\{(\d+),(\d+)\} = (-?[\d.]+) \(phase (\d+)\) where the book's kernel "
    r"reads ([MN])_\{(\d+),(\d+)\} = (-?[\d.]+)"
)


@pytest.fixture(scope="module")
def drop2():
    # Fig. 5.8's 4 x 4 example, TILE_WIDTH 2, without barrier 2: phase 1's loads race
    # with phase 0's k loop
    return vizmm.load(str(resources.files("vizmm") / "data" / "lab-4x4-drop2.vizmm"))


def _wrong_frames(trace, block=(0, 0)):
    r = Replay(trace, block)
    return r, [
        r.frame(i) for i, s in enumerate(r.steps) if s.sub == Sub.K and r.frame(i).wrong_notes
    ]


def test_a_wrong_read_names_both_elements_and_both_values(drop2):
    T = drop2.tile_width
    by, bx = 0, 0
    _, frames = _wrong_frames(drop2)
    assert frames, "the lab trace holds wrong reads"
    seen = 0
    for f in frames:
        ph, k = f.step.phase, f.step.k
        for (ty, tx), note in f.wrong_notes.items():
            for m in NOTE.finditer(note):
                name, r, c, v, _found_ph, bname, br, bc, bv = m.groups()
                a = drop2.M if name == "M" else drop2.N
                assert float(v) == a[int(r), int(c)]  # the number read is that element's
                # the book's element from Fig. 5.9's indexing, and its value
                want = (by * T + ty, ph * T + k) if name == "M" else (ph * T + k, bx * T + tx)
                assert (bname, int(br), int(bc)) == (name, *want)
                assert float(bv) == a[want]
                seen += 1
    assert seen >= 4


def test_the_picture_shows_what_the_racing_thread_found(drop2):
    _, frames = _wrong_frames(drop2)
    for f in frames:
        cols = frame_columns(f, drop2, ["Mds", "Nds"])
        for array, src in (("Mds", cols["Mds"]), ("Nds", cols["Nds"])):
            T = drop2.tile_width
            for t, text in enumerate(src["text"]):
                if not text.startswith("✗"):
                    continue
                row, col = divmod(t, T)
                found = f.slot_found[(array, row, col)]
                ty, tx = found.reader
                # the reader's own note says what it found; the slot shows that element
                note = f.wrong_notes[(ty, tx)]
                m = [x for x in NOTE.finditer(note) if x.group(1) == array[0]]
                assert m, note
                name, r, c, v = m[0].groups()[:4]
                sub = (
                    "".join("₀₁₂₃₄₅₆₇₈₉"[int(d)] for d in r)
                    + ","
                    + "".join("₀₁₂₃₄₅₆₇₈₉"[int(d)] for d in c)
                )
                assert text == f"✗ {name}{sub}\n{v}", (text, note)
                assert f"thread ({ty},{tx})" in src["state"][t]


def test_a_wrong_pvalue_shows_the_right_one(drop2):
    r = Replay(drop2, (0, 0))
    last = r.frame(len(r) - 1)
    assert last.step.sub == Sub.WRITE_P
    cols = frame_columns(last, drop2, ["P_pvalue"])["P_pvalue"]
    right = drop2.M.astype(np.float64) @ drop2.N.astype(np.float64)  # NumPy, not the kernel
    T = drop2.tile_width
    checked = 0
    for ty in range(T):
        for tx in range(T):
            text = cols["text"][ty * T + tx]
            if last.p_wrong[ty, tx]:
                got, want = text.split("\n")
                assert got == f"✗ {drop2.P[ty, tx]:g}" and want == f"✓ {right[ty, tx]:g}"
                checked += 1
            else:
                assert "✓" not in text
    assert checked >= 1


def test_the_hazard_list_says_what_was_found_and_what_is_right(drop2):
    pytest.importorskip("panel")
    from vizmm_apps import barrier_view as B

    found = B.lab_findings(drop2)
    lst = found.hazards
    rows = lst.select(wrong=True)
    assert len(rows) > 0
    T = drop2.tile_width
    for i in rows[:20]:
        label = B.row_label(lst, int(i), found=found.wrong)
        r = lst.rows[i]
        (by, bx), (ty, tx), ph, k = r["block"], r["reader"], int(r["phase"]), int(r["k"])
        m = re.search(r"✗ found ([MN])_\{(\d+),(\d+)\} = (-?[\d.]+) in (\w+)\[\d\]\[\d\], "
                      r"the book's kernel ([MN])_\{(\d+),(\d+)\} = (-?[\d.]+)", label)  # fmt: skip
        assert m, label
        name, fr, fc, fv, _arr, bname, br, bc, bv = m.groups()
        a = drop2.M if name == "M" else drop2.N
        assert float(fv) == a[int(fr), int(fc)]
        want = (by * T + ty, ph * T + k) if name == "M" else (ph * T + k, bx * T + tx)
        assert (bname, int(br), int(bc)) == (name, *want) and float(bv) == a[want]
