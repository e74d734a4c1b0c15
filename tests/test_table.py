"""vizmm.replay.table: the Fig. 5.8 structure, its rendering and its refusals."""

import pytest

from vizmm.render.text import format_table, render_text
from vizmm.replay.table import CELL_KINDS, build_table


@pytest.fixture(scope="module")
def unchecked(record_sim):
    # Fig. 5.9 without checks on 3 x 3: every kind of access occurs.
    return record_sim(width=3, tile_width=2, kernel="tiled")


def test_structure(unchecked):
    table = build_table(unchecked, (1, 1))
    # thread + 2 phases x (M, N, Pvalue, after) + P store
    assert len(table.columns) == 1 + 2 * 4 + 1
    assert table.header[0] == "thread" and table.header[-1] == "P → store"
    assert table.groups() == [("", 1), ("Phase 0", 4), ("Phase 1", 4), ("", 1)]
    assert table.phases == (0, 1) and table.block == (1, 1)
    assert all(len(row) == len(table.columns) for row in table.rows)
    kinds = {cell.kind for row in table.rows for cell in row}
    assert kinds <= set(CELL_KINDS)
    assert {"wrong_element", "out_of_allocation", "loaded", "value"} <= kinds
    for row in table.rows:
        ty, tx = row[0].thread
        assert row[0].text == f"thread_{{{ty},{tx}}}"
        for cell, column in zip(row, table.columns, strict=True):
            assert cell.thread == (ty, tx)
            assert cell.phase == column.phase


def test_value_cells_carry_the_number(record_sim):
    trace = record_sim(width=4, tile_width=2, kernel="tiled")
    table = build_table(trace, (0, 0))
    cell = table.cell((1, 0), "Phase 1: Pvalue after")
    M, N = trace.M.astype(float), trace.N.astype(float)
    assert cell.kind == "value" and cell.value == M[1] @ N[:, 0]
    assert cell.text == str(int(cell.value))
    assert table.cell((1, 0), "P → store").text == "Pvalue_{1,0} → P_{1,0}"


def test_p_store_kinds(unchecked):
    table = build_table(unchecked, (1, 1), phases=[])
    assert table.header == ["thread", "P → store"]
    # Block (1, 1) of a 3 x 3 P: only thread (0, 0) has an element, P_{2,2};
    # (0, 1) names P_{2,3}, whose index 9 is past the end of the 9 elements.
    assert table.cell((0, 0), "P → store").kind == "written"
    assert table.cell((0, 1), "P → store").kind == "out_of_allocation"


def test_max_terms(record_sim):
    trace = record_sim(width=8, tile_width=4, kernel="boundary")
    full = build_table(trace, (0, 0), phases=[0])
    short = build_table(trace, (0, 0), phases=[0], max_terms=2)
    text = full.cell((0, 0), "Phase 0: Pvalue").text
    assert text.count("*") == 4
    assert short.cell((0, 0), "Phase 0: Pvalue").text == (
        "Pvalue_{0,0} += Mds_{0,0}*Nds_{0,0} + ... + Mds_{0,3}*Nds_{3,0}"
    )


def test_render_styles():
    text = "M_{0,3}=M_{1,0} → Mds_{0,1} <x>"
    assert render_text(text, "tex") == text
    assert render_text(text, "unicode") == "M₀,₃=M₁,₀ → Mds₀,₁ <x>"
    assert render_text(text, "ascii") == "M[0,3]=M[1,0] -> Mds[0,1] <x>"
    assert render_text(text, "html") == (
        "M<sub>0,3</sub>=M<sub>1,0</sub> → Mds<sub>0,1</sub> &lt;x&gt;"
    )
    assert render_text("N_{3,0} ↛ Nds_{1,0}", "ascii") == "N[3,0] -/-> Nds[1,0]"
    with pytest.raises(ValueError, match="unknown style"):
        render_text(text, "latex")


def test_format_table_lines_line_up(unchecked):
    for unicode in (True, False):
        lines = format_table(build_table(unchecked, (0, 0)), unicode=unicode).splitlines()
        assert "block" in lines[0]  # the title
        widths = {len(line) for line in lines[1:]}
        assert len(widths) == 1, widths
        if not unicode:
            "\n".join(lines).encode("ascii")
    lines = format_table(build_table(unchecked, (0, 0)), title=False).splitlines()
    assert lines[0].startswith("┌")


def test_refusals(unchecked, record_sim):
    with pytest.raises(KeyError, match="outside the 2 x 2 grid"):
        build_table(unchecked, (2, 0))
    with pytest.raises(IndexError, match="phase 2"):
        build_table(unchecked, (0, 0), phases=[2])
    with pytest.raises(ValueError, match="max_terms"):
        build_table(unchecked, (0, 0), max_terms=1)
    windowed = record_sim(width=3, tile_width=2, kernel="tiled", window=[(1, 1)])
    with pytest.raises(KeyError, match="not recorded per thread"):
        build_table(windowed, (0, 0))
    naive = record_sim(width=3, tile_width=2, kernel="naive")
    with pytest.raises(IndexError, match="no phases"):
        build_table(naive, (0, 0), phases=[0])
    assert build_table(naive, (0, 0)).header == ["thread", "P → store"]


def test_table_extent_is_worked_out_once_per_trace_and_let_go_with_it(monkeypatch):
    """The Fig. 5.8 table's size is kept while its trace lives, and not after."""
    import gc
    import weakref

    import vizmm
    import vizmm.render.views.table as scene

    trace = vizmm.record(backend="simulator", quiet=True, width=4, tile_width=2, kernel="tiled")
    measured = []
    measure = scene._measure_table
    monkeypatch.setattr(scene, "_measure_table", lambda t: measured.append(1) or measure(t))
    width, lines = scene.table_extent(trace)
    assert scene.table_extent(trace) == (width, lines)
    assert measured == [1]
    # 4 threads per block (TILE_WIDTH 2): 4 rows and the header's 2 lines
    assert lines == 4 + 2
    assert width > 0
    count = len(scene._TABLE_EXTENTS)
    alive = weakref.ref(trace)
    del trace  # the whole tables built for it are kept on it, and go with it
    gc.collect()
    assert alive() is None  # the size kept did not keep the trace
    assert len(scene._TABLE_EXTENTS) <= count - 1


def test_a_frame_carries_its_blocks_table_and_lets_it_go_with_the_trace():
    """The Fig. 5.8 table rides on the frame; what was worked out goes with the trace."""
    import gc
    import weakref

    import vizmm
    from vizmm.render.bokeh_scene import frame_columns
    from vizmm.replay import Replay
    from vizmm.serve.caches import CACHES
    from vizmm.trace.derived import derived_count

    trace = vizmm.record(backend="simulator", quiet=True, width=4, tile_width=2, kernel="tiled")
    replay = Replay(trace, (0, 1))
    first, last = replay.frame(0), replay.frame(len(replay) - 1)
    # Fig. 5.8 for block_{0,1}: thread (0,0) loads M_{0,0} and N_{0,2} in phase 0
    # (Row = 0, Col = bx*TILE_WIDTH + tx = 2), M_{0,2} and N_{2,2} in phase 1.
    table = first.table
    assert table is last.table  # one table per block, shared by its frames
    assert table.block == (0, 1)
    assert table.cell((0, 0), "Phase 0: M → Mds").text.startswith("M_{0,0}")
    assert table.cell((0, 0), "Phase 0: N → Nds").text.startswith("N_{0,2}")
    assert table.cell((0, 0), "Phase 1: M → Mds").text.startswith("M_{0,2}")
    assert table.cell((0, 0), "Phase 1: N → Nds").text.startswith("N_{2,2}")
    # the renderer draws the frame's cells: every cell's note is in the table
    notes = set(frame_columns(last, trace, ["table"])["table"]["note"])
    assert any("N₂,₂" in n for n in notes)
    assert derived_count(trace) >= 2  # the table and its layout, kept on the trace
    assert CACHES.unbounded() == []  # every registered drawing cache has a maxsize
    alive = weakref.ref(trace)
    del trace, replay, first, last, table
    gc.collect()
    assert alive() is None  # nothing kept the trace alive
