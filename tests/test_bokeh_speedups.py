"""The server's speed-ups of Bokeh (apps/bokeh_speedups.py) change nothing a page receives.

The oracle is Bokeh itself: whole dashboard pages are serialized with Bokeh's
own methods and with the speed-ups, and must be the same, byte for byte once
model ids are numbered in order of appearance. Bokeh's check that a required
property is set must survive, and a Bokeh whose methods are not the known ones
must be left alone.
"""

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
    ]
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
