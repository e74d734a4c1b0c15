"""The server's speed-ups of Bokeh (apps/bokeh_speedups.py) change nothing a page receives.

The oracle is Bokeh itself: whole dashboard pages are serialized with Bokeh's
own methods and with the speed-ups, and must be the same, byte for byte once
model ids are numbered in order of appearance. Bokeh's check that a required
property is set must survive, and a Bokeh whose methods are not the known ones
must be left alone.
"""

import inspect
import os
import re
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from bokeh.core.has_props import HasProps  # noqa: E402
from bokeh.core.json_encoder import serialize_json  # noqa: E402
from bokeh.core.property.dataspec import DataSpec  # noqa: E402
from bokeh.core.property.descriptors import PropertyDescriptor, UnsetValueError  # noqa: E402
from bokeh.document import Document  # noqa: E402
from bokeh.protocol.messages.patch_doc import patch_doc  # noqa: E402

from apps import bokeh_speedups  # noqa: E402
from apps.dashboard import Dashboard, DashboardState  # noqa: E402
from vizmm.catalogue import CATALOGUE  # noqa: E402
from vizmm.render.bokeh_scene import frame_columns  # noqa: E402

QUERY = "HasProps.query_properties_with_values"


def _bokeh_query():
    """Bokeh's own method, whether or not the speed-up is applied in this process."""
    return bokeh_speedups._ORIGINAL.get(QUERY, HasProps.query_properties_with_values)


def _page(key: str, **state) -> Document:
    doc = Document()
    dash = Dashboard(state=DashboardState(source=key, **state), served=False)
    doc.add_root(dash.__panel__().get_root(doc))
    return doc


def _json(doc: Document, query) -> str:
    saved = HasProps.query_properties_with_values
    HasProps.query_properties_with_values = query
    try:
        text = serialize_json(doc.to_json())
    finally:
        HasProps.query_properties_with_values = saved
    # model ids (also where Panel writes one into a string, "__ref:p123") numbered
    # in order of appearance, and Panel's numbered names ("Column00937") unnumbered
    ids = {}
    text = re.sub(r'(?<=[":])p\d+(?=")', lambda m: ids.setdefault(m.group(0), f"#{len(ids)}"), text)
    return re.sub(r'"name":"(\w+?)\d{5}"', r'"name":"\1#"', text)


@pytest.mark.parametrize(
    "key, state",
    [
        ("fig5-8", {}),
        ("fig5-8", {"presenter": True, "theme": "dark", "step": 9}),
        ("fig5-11", {"transactions": True, "step": 3}),
        ("general", {"ty": 1, "tx": 0, "step": 5}),
        ("lab-4x4-drop1", {"step": 6}),
    ],
)
def test_a_page_serializes_as_bokeh_serializes_it(key, state):
    doc = _page(key, **state)
    theirs = _json(doc, _bokeh_query())
    ours = _json(doc, bokeh_speedups.query_properties_with_values)
    assert len(doc.models) > 200  # a whole page, not an empty document
    assert ours == theirs


def test_a_required_property_left_unset_still_fails():
    from bokeh.core.serialization import Serializer
    from bokeh.models import ColumnDataSource, GlyphRenderer

    bokeh_speedups.apply()
    renderer = GlyphRenderer(data_source=ColumnDataSource())  # no glyph: it is required
    with pytest.raises(UnsetValueError, match="glyph"):
        Serializer().encode(renderer)


def test_unstable_defaults_answer_as_bokeh_answers():
    from bokeh.model import Model

    bokeh_speedups.apply()
    if "Property._may_have_unstable_default" not in bokeh_speedups.applied():
        pytest.skip("this Bokeh's methods are not the ones the speed-up knows")
    checked = 0
    for cls in Model.model_class_reverse_map.values():
        for name in cls.properties():
            prop = cls.lookup(name).property
            method = type(prop)._may_have_unstable_default
            original = getattr(method, "_vizmm_original", None)
            assert original is not None, f"{type(prop).__name__} not covered"
            # Bokeh's answer, asked fresh (the property may have remembered one)
            first = original(prop)
            assert prop._may_have_unstable_default() == first
            assert prop._may_have_unstable_default() == first
            checked += 1
    assert checked > 1000


def test_defaults_are_bokeh_defaults_for_every_property():
    """Each property's default, read through the speed-up twice, is Bokeh's; containers are new."""
    from bokeh.core.property.bases import Property
    from bokeh.model import Model

    bokeh_speedups.apply()
    if "Property.themed_default" not in bokeh_speedups.applied():
        pytest.skip("this Bokeh's methods are not the ones the speed-up knows")
    bokehs = bokeh_speedups._ORIGINAL["Property.themed_default"]
    kept = checked = 0
    for cls in Model.model_class_reverse_map.values():
        for name in cls.properties():
            prop = cls.lookup(name).property
            if callable(cls._overridden_defaults().get(name, prop._default)):
                continue  # made by a function, anew each time: never kept
            theirs = bokehs(prop, cls, name, None)
            first = Property.themed_default(prop, cls, name, None)
            again = Property.themed_default(prop, cls, name, None)
            for ours in (first, again):
                assert type(ours) is type(theirs), (cls.__name__, name)
                if isinstance(theirs, HasProps):  # a model copied: equal only to itself
                    assert ours is not theirs
                    continue
                assert ours == theirs or (ours != ours and theirs != theirs), (cls.__name__, name)
            if isinstance(theirs, (list, dict, set)):
                assert first is not again  # every owner gets its own container
            kept += prop.__dict__["_vizmm_themed_defaults"][(cls, name, False, True)] is not False
            checked += 1
    assert checked > 5000 and kept > 3000


def test_a_page_built_with_the_speed_ups_is_the_page_bokeh_builds():
    """Every property of every model, defaults too, built with and without the speed-ups."""
    from bokeh.settings import settings

    bokeh_speedups.apply()
    if not bokeh_speedups.applied():
        pytest.skip("this Bokeh's methods are not the ones the speed-ups know")
    state = {"presenter": True, "theme": "dark", "step": 9}
    settings.serialize_include_defaults.set_value(True)
    try:
        ours = _json(_page("fig5-8", **state), HasProps.query_properties_with_values)
        bokeh_speedups.remove()
        theirs = _json(_page("fig5-8", **state), HasProps.query_properties_with_values)
    finally:
        bokeh_speedups.apply()
        settings.serialize_include_defaults.unset_value()
    assert len(theirs) > 100_000
    assert ours == theirs


def test_themed_values_are_bokehs():
    """A model's theme values as Bokeh's method reads them: none, a theme's, none again."""
    from bokeh.models import Circle, Range1d
    from bokeh.themes import Theme

    bokeh_speedups.apply()
    if "HasProps.themed_values" not in bokeh_speedups.applied():
        pytest.skip("this Bokeh's methods are not the ones the speed-up knows")
    bokehs = bokeh_speedups._ORIGINAL["HasProps.themed_values"]
    model, other = Circle(), Range1d()
    assert bokehs(model) is None and model.themed_values() is None
    Theme(json={"attrs": {"Circle": {"fill_alpha": 0.25}}}).apply_to_model(model)
    Theme(json={"attrs": {"Circle": {"fill_alpha": 0.25}}}).apply_to_model(other)
    assert model.themed_values() == bokehs(model) == {"fill_alpha": 0.25}
    assert model.fill_alpha == 0.25  # read through the theme
    assert other.themed_values() is bokehs(other) is None  # not a Circle: no theme values
    model.unapply_theme()
    assert bokehs(model) is None and model.themed_values() is None
    assert model.fill_alpha == 1.0


def test_another_bokeh_is_left_alone(monkeypatch):
    from bokeh.core.property.bases import Property

    # Bokeh's own methods, whether or not the speed-ups are applied in this process
    original = _bokeh_query()
    kept = bokeh_speedups._ORIGINAL
    themed_default = kept.get("Property.themed_default", Property.themed_default)
    themed_values = kept.get("HasProps.themed_values", HasProps.themed_values)
    monkeypatch.setattr(HasProps, "query_properties_with_values", original)
    monkeypatch.setattr(Property, "themed_default", themed_default)
    monkeypatch.setattr(HasProps, "themed_values", themed_values)
    init = kept.get("HasProps.__init__", HasProps.__init__)
    setter = kept.get("PropertyDescriptor.__set__", PropertyDescriptor.__set__)
    monkeypatch.setattr(HasProps, "__init__", init)
    monkeypatch.setattr(PropertyDescriptor, "__set__", setter)
    to_serializable = kept.get("DataSpec.to_serializable", DataSpec.to_serializable)
    monkeypatch.setattr(DataSpec, "to_serializable", to_serializable)
    create = kept.get("patch_doc.create", inspect.getattr_static(patch_doc, "create"))
    monkeypatch.setattr(patch_doc, "create", create)
    apply_patch = kept.get("Document.apply_json_patch", Document.apply_json_patch)
    monkeypatch.setattr(Document, "apply_json_patch", apply_patch)
    monkeypatch.setattr(bokeh_speedups, "_ORIGINAL", {})
    monkeypatch.setattr(bokeh_speedups, "KNOWN", dict.fromkeys(bokeh_speedups.KNOWN, "0" * 16))
    skipped = bokeh_speedups.apply()
    assert skipped == [
        QUERY,
        "Property._may_have_unstable_default",
        "Property.themed_default",
        "HasProps.themed_values",
        "HasProps.__init__",
        "PropertyDescriptor.__set__",
        "DataSpec.to_serializable",
        "patch_doc.create",
        "Document.apply_json_patch",
    ]
    assert inspect.getattr_static(patch_doc, "create") is create
    assert Document.apply_json_patch is apply_patch
    assert HasProps.query_properties_with_values is original
    assert HasProps.__init__ is init and PropertyDescriptor.__set__ is setter
    assert DataSpec.to_serializable is to_serializable
    assert Property.themed_default is themed_default
    assert HasProps.themed_values is themed_values
    assert bokeh_speedups.applied() == []


def test_columns_are_sent_as_arrays_with_the_frames_values():
    trace = CATALOGUE.get("fig5-8")
    dash = Dashboard(state=DashboardState(source="fig5-8", step=5), served=False)
    scene = dash._scene
    columns = frame_columns(dash.state.frame, trace, scene.sources, scene.palette)
    arrays = 0
    for name, source in scene.sources.items():
        for column, values in columns[name].items():
            sent = source.data[column]
            if isinstance(sent, np.ndarray):
                arrays += 1
                assert sent.dtype in (np.float64, np.int32) or sent.dtype.kind == "U"
                assert sent.tolist() == values  # the same values, in order
            else:
                assert sent == values
    assert arrays > 40


def test_removed_speed_ups_give_bokeh_its_methods_back():
    bokeh_speedups.apply()
    if not bokeh_speedups.applied():
        pytest.skip("this Bokeh's methods are not the ones the speed-ups know")
    from bokeh.core.property.bases import Property

    try:
        bokeh_speedups.remove()
        assert bokeh_speedups.applied() == []
        assert HasProps.query_properties_with_values is _bokeh_query()
        assert not hasattr(Property._may_have_unstable_default, "_vizmm_original")
        assert (
            bokeh_speedups._digest(HasProps.query_properties_with_values)
            == (bokeh_speedups.KNOWN[QUERY])
        )
    finally:
        bokeh_speedups.apply()
    assert HasProps.query_properties_with_values is bokeh_speedups.query_properties_with_values


def _numbered(text: str) -> str:
    """Model ids in serialized JSON numbered in order of appearance."""
    ids = {}
    return re.sub(r'(?<=")p\d+(?=")', lambda m: ids.setdefault(m.group(0), f"#{len(ids)}"), text)


def _models_made(make):
    """What ``make()`` returns, and how many models were made while it ran besides it.

    Bokeh numbers its models in the order they are made ("p1", "p2", ...);
    a model made after ``make`` returns tells where the numbers got to.
    """
    from bokeh.models import Range1d

    first = int(Range1d().id[1:])
    model = make()
    after = int(Range1d().id[1:])
    return model, after - first - 2


def test_new_models_are_bokehs_for_every_model_class():
    """Every Bokeh model class, made with no values, is Bokeh's, every property and default."""
    from bokeh.core.serialization import Serializer
    from bokeh.model import Model
    from bokeh.settings import settings

    bokeh_speedups.apply()
    if "HasProps.__init__" not in bokeh_speedups.applied():
        pytest.skip("this Bokeh's methods are not the ones the speed-up knows")
    checked = fewer = 0
    settings.serialize_include_defaults.set_value(True)
    try:
        for cls in sorted(Model.model_class_reverse_map.values(), key=lambda c: c.__qualname__):
            made = {}
            for mode in ("Bokeh", "sped up"):
                bokeh_speedups.remove() if mode == "Bokeh" else bokeh_speedups.apply()
                try:
                    model, count = _models_made(cls)
                    text = serialize_json(Serializer().encode(model))
                except Exception:  # a model that needs values: not made either way
                    made[mode] = None
                    continue
                made[mode] = _numbered(text), count, list(model._unstable_default_values)
            bokeh_speedups.apply()
            if made["Bokeh"] is None:
                assert made["sped up"] is None, cls.__qualname__
                continue
            assert made["sped up"][0] == made["Bokeh"][0], cls.__qualname__
            # the unstable defaults made and kept, in Bokeh's order
            assert made["sped up"][2] == made["Bokeh"][2], cls.__qualname__
            # none made more; fewer where the class's __init__ gives a property its
            # model (Bokeh made the default only to replace it)
            assert made["sped up"][1] <= made["Bokeh"][1], cls.__qualname__
            fewer += made["sped up"][1] < made["Bokeh"][1]
            checked += 1
    finally:
        bokeh_speedups.apply()
        settings.serialize_include_defaults.unset_value()
    assert checked > 300 and fewer >= 1


def test_a_model_given_its_models_makes_no_default_to_replace():
    """A plot given its ranges, scales, toolbar and title makes none of its own to replace.

    Bokeh reads each one's old value to compare it with the new one, and that
    read makes the default (two ``DataRange1d``, two ``LinearScale``, a
    ``Toolbar`` and a ``Title``), replaced at once. The plot is the same.
    """
    from bokeh.core.serialization import Serializer
    from bokeh.models import LinearScale, Plot, Range1d, Toolbar

    bokeh_speedups.apply()
    if "PropertyDescriptor.__set__" not in bokeh_speedups.applied():
        pytest.skip("this Bokeh's methods are not the ones the speed-up knows")

    def plot():
        given = dict(x_range=Range1d(), y_range=Range1d(start=-1), title=None)
        given.update(x_scale=LinearScale(), y_scale=LinearScale(), toolbar=Toolbar())
        return _models_made(lambda: Plot(**given, width=300))

    try:
        bokeh_speedups.remove()
        theirs, theirs_made = plot()
        theirs_json = Serializer().encode(theirs)
    finally:
        bokeh_speedups.apply()
    ours, ours_made = plot()
    assert theirs_made - ours_made == 6  # 2 ranges, 2 scales, a toolbar and a title
    assert ours.title is None and ours.y_range.start == -1 and ours.width == 300
    assert _numbered(serialize_json(Serializer().encode(ours))) == _numbered(
        serialize_json(theirs_json)
    )


#: Values a data spec can be given: a column's name, plain values of each spec's
#: type, a value or field given as a dict, values of no spec's type.
SPEC_VALUES = (
    "x",
    "red",
    "#ff000080",
    "10px",
    "italic",
    "center",
    "screen",
    3,
    2.5,
    -1,
    True,
    None,
    (255, 0, 0),
    (255, 0, 0, 0.5),
    [1, 2],
    {"field": "a"},
    {"value": 1},
    {"expr": "e"},
    np.float64(1.5),
)


def _outcome(prop, model, name, value, method):
    """What ``prop.to_serializable`` gives for ``value`` (type and value, or the error raised).

    With ``method``, Bokeh's own ``DataSpec.to_serializable`` is put in for the call
    (a subclass's method, such as ``UnitsSpec``'s, calls it through ``super()``).
    """
    saved = DataSpec.to_serializable
    if method is not None:
        DataSpec.to_serializable = method
    try:
        out = prop.to_serializable(model, name, value)
        return type(out), out
    except Exception as e:  # noqa: BLE001 - the same error both ways is what is compared
        return type(e), str(e)
    finally:
        DataSpec.to_serializable = saved


def test_data_specs_serialize_as_bokeh_serializes_them():
    """Every data spec of every model class turns each value into what Bokeh turns it into.

    Bokeh's ``DataSpec.to_serializable`` decides between a fixed value, a
    column's name and the value as given; the speed-up makes the type it
    decides with once per spec. Both must decide the same for every spec
    (numbers, colours, font sizes, angles, enumerations, ...) and value.
    """
    from bokeh.model import Model

    bokeh_speedups.apply()
    if "DataSpec.to_serializable" not in bokeh_speedups.applied():
        pytest.skip("this Bokeh's methods are not the ones the speed-up knows")
    bokeh = bokeh_speedups._ORIGINAL["DataSpec.to_serializable"]
    specs, checked = {}, 0
    for cls in Model.model_class_reverse_map.values():
        for name in cls.properties():
            prop = cls.lookup(name).property
            if isinstance(prop, DataSpec):
                specs.setdefault(type(prop).__name__ + repr(prop), (cls, name, prop))
    kinds = set()
    for cls, name, prop in specs.values():
        try:
            model = cls()
        except Exception:  # a model that needs values: its specs' types are seen elsewhere
            continue
        kinds.add(type(prop).__name__)
        for value in SPEC_VALUES:
            for _ in range(2):  # the second time, the spec's type is the one kept
                got, want = (_outcome(prop, model, name, value, method) for method in (None, bokeh))
                assert got == want, (cls.__name__, name, value)
                checked += 1
    # number, string, colour, font size, angle (units), distance, enumerations ...
    assert checked > 500 and {"NumberSpec", "ColorSpec", "FontSizeSpec", "AngleSpec"} <= kinds


def _speed_up(name: str):
    """Bokeh's method (as the class holds it) and the speed-up's, or skip."""
    bokeh_speedups.apply()
    if name not in bokeh_speedups.applied():
        pytest.skip("this Bokeh's methods are not the ones the speed-up knows")
    return bokeh_speedups._ORIGINAL[name]


def _message(create, events, doc):
    """A PATCH-DOC message's content (ids numbered), buffers, and the models still new after it.

    The document's set of new models is put back as it was, so that Bokeh's
    method and the speed-up each start from the same document.
    """
    saved = set(doc.models._new_models)
    msg = create.__get__(None, patch_doc)(events)
    still_new = {model.id for model in doc.models._new_models}
    doc.models._new_models = saved
    return _numbered(msg.content_json), [b.to_bytes() for b in msg.buffers], still_new


def test_patch_messages_are_bokehs():
    """Every kind of change a page is sent gives Bokeh's message, byte for byte.

    The oracle is Bokeh's own ``patch_doc.create`` on the same events of the
    same document: a key press on a served page (new columns as binary
    buffers, the status text, the slider), a new root (a model the page has
    never been sent, which must go in full and then be known), a list of
    models the page already has (sent as references), and a model that is in
    the document but not yet sent.
    """
    from bokeh.models import Div

    bokeh = _speed_up("patch_doc.create")
    ours = inspect.getattr_static(patch_doc, "create")
    doc = Document()
    dash = Dashboard(state=DashboardState(source="fig5-8"), served=False)
    doc.add_root(dash.__panel__().get_root(doc))
    doc.to_json()  # what the page's first pull does: every model is sent
    doc.models.flush_synced()
    events = []
    doc.on_change(lambda event: events.append(event))
    root = doc.roots[0]
    cases = []
    for key in ("ArrowRight", "ArrowRight", "ArrowLeft"):
        events.clear()
        dash.keys.press(key)
        assert any(type(e).__name__ == "ColumnDataChangedEvent" for e in events)
        cases.append(("press " + key, list(events)))
    events.clear()
    new_root = Div(text="a model the page has never been sent")
    doc.add_root(new_root)
    cases.append(("new root", list(events)))
    events.clear()
    root.children = list(reversed(root.children))  # models the page has, as references
    cases.append(("references", list(events)))
    events.clear()
    unsent = Div(text="not sent yet")
    root.children = [*root.children, unsent]
    cases.append(("a model not yet sent", list(events)))
    for name, evs in cases:
        got, want = _message(ours, evs, doc), _message(bokeh, evs, doc)
        assert got == want, name
    # the new root went in full, and after its message it is no longer new
    assert '"text":"a model the page has never been sent"' in _message(ours, cases[3][1], doc)[0]
    assert new_root.id not in _message(ours, cases[3][1], doc)[2]
    assert unsent.id not in _message(ours, cases[-1][1], doc)[2]
    assert unsent.id in {m.id for m in doc.models._new_models}


def _applied(apply_patch, doc: Document, patch: dict):
    """What applying ``patch`` to ``doc`` does.

    The outcome, the events it fired, the whole document, the models still
    new, and those the document holds but that do not know their document.
    """
    fired = []
    doc.on_change(lambda event: fired.append((type(event).__name__, getattr(event, "attr", None))))
    try:
        apply_patch(doc, patch)
        outcome = "applied"
    except Exception as error:  # noqa: BLE001 - which error is part of what is compared
        outcome = type(error).__name__
    return (
        outcome,
        fired,
        _numbered(serialize_json(doc.to_json())),
        sorted(model.id for model in doc.models._new_models),
        sorted(model.id for model in doc.models if model.document is not doc),
    )


def test_patches_from_a_page_are_applied_as_bokeh_applies_them():
    """Each kind of patch a page sends changes the document as Bokeh's method changes it.

    The oracle is Bokeh's own ``Document.apply_json_patch``: two copies of one
    dashboard page (made from the same JSON, so with the same ids) are given
    the same patches in turn, one with Bokeh's method and one with the
    speed-up, and must end alike after each: the outcome (applied, or which
    error), the change events fired, the whole document, the models still
    new, and the models attached to it. The patches: a plot's size as a
    page reports it, a key press's queue, a list of models the document has
    (references), a new model defined in the patch, a reference to no model
    (an error), and one to a model the document has removed (dropped).
    """
    bokeh = _speed_up("Document.apply_json_patch")
    ours = Document.apply_json_patch
    page_json = _page("fig5-8").to_json()
    docs = Document.from_json(page_json), Document.from_json(page_json)
    models = {m.id: m for m in docs[0].models}
    of_type = {}
    for m in models.values():
        of_type.setdefault(type(m).__name__, []).append(m.id)
    plot = of_type["Plot"][0]
    keys = next(ids[0] for name, ids in of_type.items() if name.startswith("KeyboardShortcuts"))
    root = docs[0].roots[0]
    children = [{"id": child.id} for child in reversed(root.children)]

    def change(model, attr, new):
        event = {"kind": "ModelChanged", "model": {"id": model}, "attr": attr, "new": new}
        return {"events": [event]}

    new_div = {"type": "object", "name": "Div", "id": "c1", "attributes": {"text": "from the page"}}
    patches = [
        change(plot, "inner_width", 640),
        change(keys, "queue", [[1, "ArrowRight"]]),
        change(root.id, "children", children),
        {"events": [{"kind": "RootAdded", "model": new_div}]},
        change("p-no-such-model", "text", "x"),
    ]
    for patch in patches:
        got, want = _applied(ours, docs[0], patch), _applied(bokeh, docs[1], patch)
        assert got == want, patch
    assert want[0] == "UnknownReferenceError"
    assert "from the page" in want[2]
    # a model the document once had: the patch is dropped by both
    before = {m.id for m in docs[0].models}
    for doc in docs:
        doc.roots[0].children = doc.roots[0].children[:-1]
    gone = sorted(before - {m.id for m in docs[0].models})
    assert gone and all(docs[1].models.seen(i) for i in gone)
    dropped = change(gone[0], "name", "gone")
    got, want = _applied(ours, docs[0], dropped), _applied(bokeh, docs[1], dropped)
    assert got == want and want[0] == "applied" and want[1] == []
