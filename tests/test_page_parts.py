"""A new dashboard page makes only what it shows; the rest comes when first needed.

Every Bokeh model a new page makes costs the server CPU time, whether it is
sent or thrown away (issue 28). These tests check that the parts left out
of a new page are still there, drawn and filled, once the page needs them.
"""

import pytest

pytest.importorskip("panel")

from vizmm.render.bokeh_scene import frame_columns  # noqa: E402
from vizmm_apps.dashboard import Dashboard  # noqa: E402

#: The sources of what only some frames show: a finding's outlines and the
#: memory-transactions view (banks, the warp's threads, the per-warp row).
LATER = {
    *(f"{v}_finding" for v in ("M", "N", "P", "Mds", "Nds", "threads")),
    "Mds_bank",
    "Nds_bank",
    "warp_threads",
    "warps",
}


def _sent(source) -> dict:
    return {c: v.tolist() if hasattr(v, "tolist") else list(v) for c, v in source.data.items()}


@pytest.fixture
def dash():
    return Dashboard(served=False)


def test_transactions_sources_made_and_filled_when_first_shown(dash):
    scene = dash._scene
    assert LATER <= set(scene.sources)  # every source keeps its name
    assert LATER.isdisjoint(scene.sources.made())  # none of them made for a new page
    dash.state.transactions = True
    dash.state.go(8)  # a step of the k loop: the transactions view has banks and a warp
    frame = dash.state.frame
    assert frame.transactions is not None
    made = set(scene.sources.made())
    assert {"Mds_bank", "Nds_bank", "warp_threads", "warps"} <= made
    assert not made & {n for n in LATER if n.endswith("_finding")}  # no finding shown
    # each made source holds this frame's columns, as the pure function gives them
    want = frame_columns(frame, dash.state.trace, ["warps", "warp_threads", "Mds_bank"])
    for name, cols in want.items():
        assert _sent(scene.sources[name]) == cols
    # and the figures draw them: the warp's outline over the thread grid
    drawn = [
        r
        for r in scene.figures["threads"].renderers
        if getattr(r, "name", "") == "vizmm-warp-threads"
    ]
    assert len(drawn) == 1 and drawn[0].data_source is scene.sources["warp_threads"]


def test_hidden_parts_join_the_page_when_first_shown(dash):
    layout, controls = dash.layout.objects, dash.controls.objects
    assert not any(o is dash.alert or o is dash.presenter_view for o in layout)
    assert not any(o is dash.unfollow for o in controls)
    assert not any(o is dash.progress for o in dash._status_row.objects)

    dash.state.show("Something went wrong")
    objs = dash.layout.objects
    at = next(i for i, o in enumerate(objs) if o is dash.alert)
    assert objs[at + 1] is dash._status_row and dash.alert.visible
    dash.state.show("")
    assert not dash.alert.visible and any(o is dash.alert for o in dash.layout.objects)

    dash.state.busy = "Loading a trace"
    assert dash.progress.visible and dash._status_row.objects[-1] is dash.progress

    dash.state.follow(0, 1)  # following a thread: its button to stop comes after 'order'
    objs = dash.controls.objects
    at = next(i for i, o in enumerate(objs) if o is dash.unfollow)
    assert objs[at - 1] is dash.order and dash.unfollow.visible

    dash.state.presenter = True
    objs = dash.layout.objects
    at = next(i for i, o in enumerate(objs) if o is dash.presenter_view)
    assert objs[at - 1] is dash.tabs and dash.presenter_view.visible
    dash.state.presenter = False
    assert not dash.presenter_view.visible


def test_loading_sections_made_when_first_opened(dash):
    # The record form, upload box, export widgets and keys table are in no
    # section of a new page (nor in its document); pressing a section's button
    # makes and shows it, pressing it again hides it.
    from bokeh.document import Document

    titles = ["Record a trace", "Load a trace file", "Export", "Keys and clicks"]
    assert dash.more.options == titles and dash.more.value == []
    assert not dash.more_sections.objects
    assert not any(o is dash.more_sections for o in dash.menu.objects)
    assert dash._export_made is None
    assert "record_form" not in vars(dash) and "upload" not in vars(dash)
    doc = Document()
    dash.__panel__().server_doc(doc)
    labels = {getattr(m, "label", None) for m in doc.models}
    assert not labels & {"Record", "Export this block"}

    def section(title):
        """The section's title and content, in a column shown."""
        (found,) = [c for c in dash.more_sections.objects if title in c.objects[0].object]
        assert found.visible
        return found.objects[1]

    dash.more.value = ["Export"]
    objs = dash.menu.objects  # the sections join the "More" menu under their buttons' row
    at = next(i for i, o in enumerate(objs) if o is dash.more_sections)
    assert any(o is dash.more for o in objs[at - 1].objects)
    column = section("Export")
    assert list(column.objects) == [dash.export_format, dash.export_button, dash.export_note]
    s = dash.state  # the file is named for the block shown, as before
    assert dash.export_button.filename == f"vizmm-{s.source}-block{s.by}{s.bx}-{s.granularity}.gif"
    assert "record_form" not in vars(dash)
    dash.more.value = ["Record a trace", "Export"]
    assert "record_form" in vars(dash)
    form = section("Record a trace")  # the form's own layout
    assert any(o is dash.record_form._button for o in form.objects)
    dash.more.value = titles
    assert any(o is dash.upload.sender for o in section("Load a trace file").objects)
    assert "next step" in section("Keys and clicks").object
    # in the buttons' order, whatever the order they were opened in
    shown = [c.objects[0].object for c in dash.more_sections.objects]
    assert [next(t for t in titles if t in h) for h in shown] == titles
    # closed: hidden, and made once (the same form when opened again)
    form = dash.record_form
    dash.more.value = ["Export"]
    assert [c.visible for c in dash.more_sections.objects] == [False, False, True, False]
    dash.more.value = ["Export", "Record a trace"]
    assert dash.record_form is form and dash.more_sections.objects[0].visible


def test_page_scripts_are_one_component_running_each_script(dash):
    # The keys, theme, window size and landmarks are one component of the page,
    # whose module runs each class's own script.
    from vizmm_apps.access import PageLandmarks
    from vizmm_apps.keys import KeyboardShortcuts, PageTheme
    from vizmm_apps.parts import PageScript
    from vizmm_apps.viewport import Viewport

    scripts = [o for o in dash.layout.objects if isinstance(o, PageScript)]
    assert len(scripts) == 1 and scripts[0] is dash.page_scripts
    assert dash.keys is dash.page_theme is dash.viewport is dash.landmarks is dash.page_scripts
    esm = type(dash.page_scripts)._esm
    for cls in (KeyboardShortcuts, PageTheme, Viewport, PageLandmarks):
        assert isinstance(dash.page_scripts, cls)
        # the script of the class alone, the same text in the combined module
        own = cls._esm.split("const SETUPS = [];\n")[1].split("export function render")[0]
        assert own.count("SETUPS.push(setup);") == 1 and own in esm
    assert esm.count("SETUPS.push(setup);") == 4
    dash.keys.press("ArrowRight")  # the keys act
    assert dash.state.step == 1 and dash.keys.pressed == 1
    assert dash._presenter_fit() is None  # the window's size: unknown until the page says
    dash.viewport.param.update(inner_width=1280, inner_height=720)
    assert dash._presenter_fit() is not None


def test_quiz_marks_made_with_the_first_question():
    from vizmm_apps.dashboard import create_app
    from vizmm_apps.quiz import QuestionMode

    dash = create_app(served=False)
    mode = next(
        h.__self__
        for h in dash.scene_hooks
        if isinstance(getattr(h, "__self__", None), QuestionMode)
    )
    assert mode._mark_sources is None  # a page that asks nothing makes no mark sources
    mode.ask_here()
    assert mode.question is not None and mode._mark_sources is not None
    # the picks' marks are drawn on the scene's clickable views, from those sources
    views = list(mode._clickable(dash._scene))
    assert views
    for view, fig in views:
        assert any(getattr(r, "data_source", None) is mode.marks[view] for r in fig.renderers)


@pytest.mark.browser
def test_served_page_shows_the_alert_it_left_out(new_page, dashboard_url):
    """A bad URL value is named in the alert, which joins the page above the status line."""
    import os
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if root not in sys.path:
        sys.path.insert(0, root)
    url = dashboard_url
    errors: list[str] = []
    pg = new_page(viewport={"width": 1280, "height": 720})
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(url + "?trace=fig5-8&step=abc")
    pg.wait_for_selector("#vizmm-status[data-ready='true']", timeout=90000)
    alert = pg.get_by_text("Ignored in the URL").first
    alert.wait_for(state="visible", timeout=30000)
    assert "step" in alert.inner_text()
    top = alert.bounding_box()["y"]
    assert top < pg.locator("#vizmm-status").bounding_box()["y"]
    assert not errors, errors


def test_a_job_keeps_its_progress_its_result_or_what_it_raised():
    import threading

    from vizmm_apps.parts import Job

    def work(job):
        job.progress(3, 4)
        return 6 * 7

    job = Job(work, "answer")
    assert job.percent is None and not job.finished
    job.start()
    thread = next((t for t in threading.enumerate() if t.name == "vizmm-job-answer"), None)
    if thread is not None:  # None: it has already finished
        thread.join(30)
    assert job.finished and job.result == 42 and job.error is None and job.percent == 75

    def broken(job):
        raise ValueError("no such block")

    failed = Job(broken)
    failed.run()
    assert failed.finished and isinstance(failed.error, ValueError) and failed.result is None
