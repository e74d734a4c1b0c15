"""How plots colour and name the book's kernels comes from the kernel registry.

The oracles: the colours and names the renderers spelled out by hand before
(``vizmm/render/palette.py``'s ``KERNEL_COLORS``, the large view's read-map
titles), written here literally, and the kernel registry's ``KernelSpec``.
The registry has no ``register``: a kernel is added by adding its spec, and
every derived list follows (tests/test_kernel_registry.py).
"""

import pytest

from vizmm.trace import KERNEL_SPECS

#: ``palette.KERNEL_COLORS`` as it was written before (Okabe-Ito hues).
OLD_COLORS = {
    "naive": "#d55e00",
    "tiled": "#0072b2",
    "boundary": "#009e73",
    "dynamic": "#cc79a7",
    "dynamic_any": "#e69f00",
    "cublas": "#000000",
    "book": "#8c959f",
}
#: The large view's names of the kernels in its read maps, as written before.
OLD_LABELS = {
    "tiled": "tiled kernel (Fig. 5.9)",
    "boundary": "tiled kernel (Fig. 5.13)",
    "general": "general tiled kernel",
    "naive": "naive kernel (Fig. 3.11)",
    "dynamic": "tiled kernel (Fig. 5.14)",
}


def test_the_kernel_colours_are_the_specs_then_the_other_series_as_written_before():
    from vizmm.render import palette as pal

    assert pal.KERNEL_COLORS == OLD_COLORS
    assert list(pal.KERNEL_COLORS) == list(OLD_COLORS)  # the same order (a legend's)
    from_specs = {s.name: s.color for s in KERNEL_SPECS.values() if s.color is not None}
    assert pal.KERNEL_COLORS == {**from_specs, **pal.SERIES_COLORS}
    assert not set(pal.SERIES_COLORS) & set(KERNEL_SPECS)  # the others are no book kernel


def test_a_kernel_without_a_colour_is_drawn_muted_as_before():
    from vizmm.render import palette as pal
    from vizmm.render.roofline_bokeh import _color

    for name, spec in KERNEL_SPECS.items():
        want = OLD_COLORS.get(name, pal.LIGHT.MUTED)
        assert _color(name) == want and (spec.color or pal.LIGHT.MUTED) == want
    assert _color("cublas", pal.DARK) == pal.DARK.TEXT


def test_the_kernel_names_of_the_read_maps_are_the_specs_labels_as_written_before():
    pytest.importorskip("bokeh")
    from vizmm.render.large_bokeh import KERNEL_LABELS

    assert KERNEL_LABELS == OLD_LABELS
    assert KERNEL_LABELS == {s.name: s.label for s in KERNEL_SPECS.values() if s.label}


@pytest.mark.parametrize("kernel", ["tiled", "boundary", "conflict"])
def test_the_read_maps_are_titled_as_before(kernel):
    pytest.importorskip("bokeh")
    from test_large import schedule, synthetic

    from vizmm.render.large_bokeh import LargeScene

    times, sm = schedule(gy=4, gx=4, sms=2, resident=2, dur=1000)
    sc = LargeScene(synthetic(times=times, sm=sm, meta={"kernel": kernel}))
    what = OLD_LABELS.get(kernel, kernel)  # a kernel without a label: its name
    assert sc.figures["M"].title.text == f"M · {what}"
    assert sc.figures["N_naive"].title.text == "N · naive kernel (Fig. 3.11)"
