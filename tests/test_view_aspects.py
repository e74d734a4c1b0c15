"""A view drawn from a frame made of only its aspects looks as it does from the whole frame.

The oracle is the whole frame (``Replay.frame(i)``, every aspect): for each
registered view, the Bokeh scene's sources and the Pillow image drawn from
``Replay.frame(i, aspects=<the view's aspects>)`` must equal those drawn
from it, at every step, on a barrier-lab trace (the lab's marks, reads) and
a checked student kernel with its first finding marked. A view that reads a
field of an aspect it did not declare raises ``AspectNotComputed`` instead.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import vizmm
from vizmm.render import views as view_specs
from vizmm.render.bokeh_scene import Scene
from vizmm.render.pillow import VIEWS as PILLOW_VIEWS
from vizmm.render.pillow import FrameRenderer
from vizmm.replay import ASPECTS, Replay
from vizmm.replay.findings import finding_marks, with_finding

REPO = Path(__file__).resolve().parents[1]
GRIDS = ("M", "N", "P", "Mds", "Nds", "threads")


@pytest.fixture(scope="module")
def traces():
    labels = json.loads((REPO / "benchmarks/labelled/labels.json").read_text())["kernels"]
    wrong = next(k for k in labels if k["file"].endswith("w01_m_load_indices_swapped.py"))
    report = vizmm.check(
        f"{REPO / 'benchmarks/labelled' / wrong['file']}:{wrong['kernel']}",
        width=4,
        tile_width=2,
        backend="simulator",
    )
    assert report.findings, "the planted swap is found"
    lab = vizmm.record(
        kernel="tiled",
        width=4,
        tile_width=2,
        backend="simulator",
        quiet=True,
        drop_barrier=1,
        reads=True,
    )
    return {
        "lab": (lab, None),
        "checked": (report.trace, finding_marks(report.findings[0], report.trace)),
    }


def _frames(replay, i, aspects, marks):
    whole, part = replay.frame(i), replay.frame(i, aspects=aspects)
    if marks is not None:
        whole, part = with_finding(whole, marks), with_finding(part, marks)
    return whole, part


def test_every_view_declares_replay_aspects():
    for spec in view_specs.all_views(hosted=True):
        assert set(spec.aspects) <= set(ASPECTS), spec.name


def test_aspects_of_takes_the_hosted_parts_along():
    hosted = {p.name: p for p in view_specs.parts("threads")}
    assert hosted, "the per-warp row is a part of the threads view"
    got = set(view_specs.aspects_of(["threads"]))
    for part in hosted.values():
        assert set(part.aspects) <= got
    assert view_specs.aspects_of([]) == ()
    with pytest.raises(KeyError):
        view_specs.aspects_of(["no such view"])


@pytest.mark.parametrize("name", [s.name for s in view_specs.all_views()])
def test_a_scene_of_one_view_needs_only_its_aspects(traces, name):
    for trace, marks in traces.values():
        replay = Replay(trace)
        whole_scene, part_scene = Scene(trace, views=[name]), Scene(trace, views=[name])
        for i in range(len(replay)):
            whole, part = _frames(replay, i, part_scene.aspects, marks)
            whole_scene.update(whole)
            part_scene.update(part)
            for source, cds in whole_scene.sources.items():
                a, b = cds.data, part_scene.sources[source].data
                assert a.keys() == b.keys(), (name, i, source)
                for column in a:
                    assert list(map(repr, a[column])) == list(map(repr, b[column])), (
                        name,
                        i,
                        source,
                        column,
                    )


@pytest.mark.parametrize("name", PILLOW_VIEWS)
def test_a_pillow_image_needs_only_its_views_aspects(traces, name):
    views = [name] if name in GRIDS else [name, "Mds"]
    for trace, marks in traces.values():
        replay = Replay(trace)
        renderer = FrameRenderer(trace, size=(480, 270), views=views)
        assert "caption" in renderer.aspects  # the title of every image
        for i in range(len(replay)):
            whole, part = _frames(replay, i, renderer.aspects, marks)
            a, b = np.asarray(renderer.render(whole)), np.asarray(renderer.render(part))
            assert a.tobytes() == b.tobytes(), (name, i)
