"""Less work for Bokeh on every new page and every message: nine speed-ups.

A served dashboard page is about 350 Bokeh models, and the server builds and
serializes them for every visitor. Profiling a server with a class arriving
(``py-spy``; ``benchmarks/bench_sessions.py``) showed most of that time in
Bokeh reading the *defaults* of properties, two ways:

* ``HasProps.query_properties_with_values`` (what ``Document.to_json`` uses for
  every model) reads every property's value, default or not, and only then
  drops the defaults it does not send: a page's ``to_json`` resolved, copied
  and validated about 8,000 defaults to send none of them. Here a property
  that has a default and is not going to be sent is not read. A property
  without a default is still read, so a model with a required property unset
  still fails to serialize (Bokeh's check, kept). What is sent is unchanged
  (``tests/test_bokeh_speedups.py`` compares whole pages with and without).
* ``Property._may_have_unstable_default()``, asked for every property of every
  new model, walks the property's type parameters each time; its answer
  depends only on the property's default and type, which do not change once
  the property is made. Here each property answers once and remembers.
* ``Property.themed_default`` (what reading an unset property returns, and
  what setting one compares with) copies the default, merges the class's
  overridden defaults (a walk of the class's MRO) and validates the result,
  every time: a page asked it about 7,000 times. Here, for each property, class
  and name, a default that is an immutable value (``None``, a number, a string,
  a tuple of those) is prepared once and returned again, and one that is an
  empty container is made anew as Bokeh makes it (the same wrapper type,
  empty), without the copy and the validation. A theme's value, a default
  made by a function, and any other default go to Bokeh's method as before.
* ``HasProps.themed_values`` (asked on every default read) looks for an
  attribute that is there only on a themed model, and on every other model
  the miss goes through ``HasProps.__getattr__`` and an ``AttributeError``.
  Here the model's ``__dict__`` is asked first.
* ``HasProps.__init__`` asks every property of every new model whether its
  default is unstable (a new object per model, made at once), about 19,000
  questions a page whose answers depend only on the model's class. Here each
  class answers once, keeping the names in Bokeh's order, and a new model
  makes exactly the defaults Bokeh makes, in the same order.
* ``PropertyDescriptor.__set__`` reads a property's old value to compare it
  with the new one. While a model is being made, for a property whose default
  is a model (``InstanceDefault``: a plot's ranges, scales, toolbar and title,
  a renderer's view, a view's filter) and that nobody has read yet, that read
  makes the default model only for it to be replaced at once: a dashboard
  page made about 230 such models (627 made for about 325 sent). Here no
  model is made to be compared: none could equal the value given (a model
  equals only itself), and nothing can have seen it (a model being made has
  no callbacks and no document). Every other set is Bokeh's.
* ``DataSpec.to_serializable`` (every glyph's data specs, in every
  ``to_json`` a page's first pull makes) decides whether a value is a fixed
  value or a column's name against a new property tree made for each
  question (the spec's type with ``String`` left out). Here each spec makes
  that tree once: a page's ``to_json`` took 34 ms of CPU with Bokeh's
  method and 24 ms with this one (median of 25 pages).

Two more are for every message a page and the server exchange once it is
open (a key press, a step's new columns, the URL the page reports back).
Profiling a served dashboard with pages stepping (``py-spy``) showed about a
fifth of the server's time in making, for each message, a table of every
model of the page (about 350) to look up the few the message names:

* ``patch_doc.create`` (every ``PATCH-DOC`` the server sends) gives its
  ``Serializer`` the document's synced models, for which the ``Serializer``
  makes a reference each. Here a model is looked up in the document when
  the ``Serializer`` asks about it.
* ``Document.apply_json_patch`` (every ``PATCH-DOC`` a page sends) gives its
  ``Deserializer`` a list of every model, which it turns into a dict by id.
  Here the ``Deserializer`` reads the document's own dict, with the models
  the patch makes kept apart in front of it.

All nine replace a method of Bokeh, so they are applied only to the Bokeh code
they were written against: each checks that the method it replaces is still
the one it knows (a hash of its source). Another Bokeh version leaves the
methods as they are (:func:`apply` says which were not applied), and every
page is still right, only slower.

``vizmm serve`` applies them in each server process (``apps/preload.py``);
nothing else in vizmm does.
"""

from __future__ import annotations

import collections
import hashlib
import inspect
import logging
from typing import Any

from bokeh.core.has_props import HasProps
from bokeh.core.property.bases import Property, validation_on
from bokeh.core.property.dataspec import DataSpec
from bokeh.core.property.descriptors import PropertyDescriptor
from bokeh.core.property.instance import InstanceDefault
from bokeh.core.property.nothing import Nothing
from bokeh.core.property.primitive import String
from bokeh.core.property.singletons import Intrinsic, Undefined
from bokeh.core.property.vectorization import Field, Value
from bokeh.core.property.wrappers import (
    PropertyValueContainer,
    PropertyValueDict,
    PropertyValueList,
    PropertyValueSet,
)
from bokeh.core.serialization import Deserializer, Serializer, UnknownReferenceError
from bokeh.document.document import Document
from bokeh.document.events import DocumentPatchedEvent
from bokeh.document.json import PatchJson
from bokeh.document.models import DocumentModelManager
from bokeh.model import Model
from bokeh.protocol.messages.patch_doc import patch_doc

__all__ = ["apply", "applied", "remove", "KNOWN"]

log = logging.getLogger(__name__)

#: sha256 (first 16 hex digits) of the source of each Bokeh method replaced
#: here, as in the Bokeh versions these speed-ups were written for (3.4-3.9).
KNOWN = {
    "HasProps.query_properties_with_values": "e864a09d384658f4",
    # the four implementations together (Property, Object, ParameterizedProperty,
    # ContainerProperty): each depends only on the property's default and type
    "Property._may_have_unstable_default": "22e764f54d1ead4a",
    # with the two methods whose results it stands for: _raw_default, _copy_default
    "Property.themed_default": "64d7c4fc8bbc0fbe",
    "HasProps.themed_values": "668c1fc00de346e8",
    # as in Bokeh 3.9
    "HasProps.__init__": "8184f3bb9444ab37",
    # with the two methods it relies on: _set (the comparison), _trigger
    "PropertyDescriptor.__set__": "dc670eaaf0995c60",
    "DataSpec.to_serializable": "e0aca301d2d87cec",
    # with Serializer's __init__, has_ref, get_ref, add_ref and encode, and the
    # model manager's synced_references and flush_synced
    "patch_doc.create": "1a867ca71fe133ca",
    # with Deserializer's __init__, has_ref, _decode_ref and _decode_object_ref
    "Document.apply_json_patch": "732cbf683b4f0e27",
}

_ORIGINAL: dict[str, Any] = {}


def _digest(*fns) -> str:
    try:
        text = "".join(inspect.getsource(fn) for fn in fns)
    except (OSError, TypeError):  # no source to compare: an unknown Bokeh
        return ""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def query_properties_with_values(
    self: HasProps, query, *, include_defaults: bool = True, include_undefined: bool = False
) -> dict[str, Any]:
    """``HasProps.query_properties_with_values`` without reading unsent defaults.

    The same result as Bokeh's: with ``include_defaults=False`` (serialization)
    a property that is neither set, nor an unstable default, nor themed is not
    sent, so when it also has a default it is not read at all. Properties
    without a default are read as before (an unset one raises Bokeh's
    ``UnsetValueError``).
    """
    if include_defaults or include_undefined:
        return _ORIGINAL["HasProps.query_properties_with_values"](
            self, query, include_defaults=include_defaults, include_undefined=include_undefined
        )
    selected = set(self._property_values) | set(self._unstable_default_values)
    themed_values = self.themed_values()
    themed_keys = set(themed_values) if themed_values is not None else set()
    selected |= themed_keys
    result: dict[str, Any] = {}
    for key in self.properties(_with_props=True):
        descriptor = self.lookup(key)
        if key not in selected and descriptor.property._default is not Undefined:
            continue  # a default, not sent: Bokeh would read it and drop it
        if not query(descriptor):
            continue
        value = descriptor.get_value(self)  # raises for a required property left unset
        if key not in selected:
            continue
        if (
            key not in themed_keys
            and isinstance(value, PropertyValueContainer)
            and key in self._unstable_default_values
        ):
            continue
        result[key] = value
    return result


def themed_values(self: HasProps) -> dict[str, Any] | None:
    """``HasProps.themed_values``: the theme's values of this model, or None; no exception raised.

    ``HasProps.apply_theme`` sets the attribute in the model's ``__dict__``;
    the class is asked only when it is not there (as Bokeh's ``getattr`` would).
    """
    try:
        return self.__dict__["__themed_values__"]
    except KeyError:
        return getattr(type(self), "__themed_values__", None)


#: Per model class, the names of its properties whose default is unstable, in
#: Bokeh's order (the first model of a class fills it).
_UNSTABLE_NAMES: dict[type, tuple[str, ...]] = {}


def has_props_init(self: HasProps, **properties: Any) -> None:
    """``HasProps.__init__``, with each class's unstable-default properties found once.

    The same model as Bokeh's: the given values are set in the order given,
    then every property with an unstable default that was not given is read,
    in Bokeh's order (which fills in its default, as Bokeh does), and the
    model is marked initialized. Whether a default is unstable depends on the
    property and on the class's overridden defaults, never on the model.
    """
    super(HasProps, self).__init__()
    self._property_values = {}
    self._unstable_default_values = {}
    self._unstable_themed_values = {}
    for name, value in properties.items():
        if value is Undefined or value is Intrinsic:
            continue
        setattr(self, name, value)
    cls = type(self)
    names = _UNSTABLE_NAMES.get(cls)
    if names is None:
        names = _UNSTABLE_NAMES[cls] = tuple(
            name
            for name in self.properties(_with_props=True)
            if self.lookup(name).has_unstable_default(self)
        )
    for name in names:
        if name not in properties:
            self.lookup(name)._get(self)  # fills in the default, as Bokeh's __init__ does
    self._initialized = True


class _NotRead:
    """The old value of a model property not read yet while its model is made."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<default not made>"


_NOT_READ = _NotRead()


def descriptor_set(self: PropertyDescriptor, obj: HasProps, value: Any, *, setter=None) -> None:
    """``PropertyDescriptor.__set__``, without making a default model only to compare it.

    While ``obj`` is being made (not yet initialized, no callbacks, no
    document), a property whose default is a model (``InstanceDefault``) and
    that has neither been set nor read has that default made by Bokeh's read
    of the old value, which the new value then replaces. Here the old value
    is a marker that equals nothing, so the value is set exactly as Bokeh sets
    it (validated, stored, triggered with no one listening) and no default
    model is made. Every other set is Bokeh's.
    """
    name = self.name
    if (
        not obj._initialized
        and "_property_values" in obj.__dict__
        and name not in obj._property_values
        and name not in obj._unstable_default_values
        and not obj.__dict__.get("_callbacks")
        and obj.__dict__.get("_document") is None
        and isinstance(
            obj.__overridden_defaults__.get(name, self.property._default), InstanceDefault
        )
    ):
        value = self.property.prepare_value(obj, name, value)
        self._set(obj, _NOT_READ, value, setter=setter)
        return
    _ORIGINAL["PropertyDescriptor.__set__"](self, obj, value, setter=setter)


def dataspec_to_serializable(self: DataSpec, obj: HasProps, name: str, val: Any) -> Any:
    """``DataSpec.to_serializable`` with its value type (``String`` left out) made once.

    Bokeh's method asks, for every data-spec value it serializes, whether the
    value is a plain value of the spec's type other than a string, against
    ``self.value_type.replace(String, Nothing())``: a new property tree made
    for each question (a page's ``to_json`` made about 2,500). That tree
    depends only on the spec, whose value type does not change once it is
    made; here each spec makes it once and asks it again.
    """
    try:
        without_string = self.__dict__["_vizmm_value_type_without_string"]
    except KeyError:
        without_string = self.value_type.replace(String, Nothing())
        self.__dict__["_vizmm_value_type_without_string"] = without_string
    try:
        without_string.validate(val, False)
        return Value(val)
    except ValueError:
        pass
    if isinstance(val, str):
        return Field(val)
    return val


class _SyncedSerializer(Serializer):
    """A ``Serializer`` whose references are a document's synced models, found when asked.

    Bokeh's ``PATCH-DOC`` message makes a ``Serializer`` given the document's
    synced models (every model but those the client has not been sent), and
    the ``Serializer`` makes a reference (a new ``{"id": ...}``) for each of
    them, about 350 on a dashboard page, for every message, to look up the few
    the message names. Here a model is a reference when it is asked about: it
    is one if the document's manager holds it under its id and it is not new
    (the manager's dict and new-model set as they were when the message was
    begun, as Bokeh's copy is). A reference is made once per model and message.
    """

    def __init__(self, models: DocumentModelManager) -> None:
        super().__init__()
        self._synced_by_id = models._models
        self._not_synced = models._new_models

    def _synced(self, obj: Any) -> bool:
        return (
            isinstance(obj, Model)
            and self._synced_by_id.get(obj.id) is obj
            and obj not in self._not_synced
        )

    def has_ref(self, obj: Any) -> bool:
        return id(obj) in self._references or self._synced(obj)

    def get_ref(self, obj: Any):
        ref = self._references.get(id(obj))
        if ref is None and self._synced(obj):
            ref = self._references[id(obj)] = obj.ref
        return ref


def patch_doc_create(cls, events: list, **metadata: Any):
    """``patch_doc.create`` (a ``PATCH-DOC`` message), with no reference made for every model.

    The same message as Bokeh's: the same checks, the events serialized with
    the document's synced models as references, and the models it sends in
    full no longer new. Only the references are found when the serializer
    asks (:class:`_SyncedSerializer`) instead of made for every model first.
    With the table :func:`apply_json_patch` no longer makes, that was about a
    fifth of a served dashboard's sampled time per key press (``py-spy``, ten
    pages stepping).
    """
    header = cls.create_header()
    if not events:
        raise ValueError("PATCH-DOC message requires at least one event")
    docs = {event.document for event in events}
    if len(docs) != 1:
        raise ValueError("PATCH-DOC message configured with events for more than one document")
    [doc] = docs
    serializer = _SyncedSerializer(doc.models)
    patch_json = PatchJson(events=serializer.encode(events))
    doc.models.flush_synced(lambda model: not serializer.has_ref(model))
    msg = cls(header, metadata, patch_json)
    msg.add_buffers(*serializer.buffers)
    return msg


def apply_json_patch(self: Document, patch_json, *, setter=None) -> None:
    """``Document.apply_json_patch``, reading the document's models where they are kept.

    Bokeh's method gives its ``Deserializer`` a list of every model of the
    document, which the ``Deserializer`` turns into a new dict by id, for
    every message a page sends (a key press, the URL it reports back). Here
    the ``Deserializer`` looks models up in the document's own dict (as it
    was when the patch arrived, as Bokeh's list is), and the models the patch
    itself makes go in a dict of their own in front of it, so the document's
    dict is never written to. Everything else is Bokeh's: an unknown
    reference to a model the document once had drops the patch, any other
    raises, and the models the patch made are no longer new.
    """
    deserializer = Deserializer(setter=setter)
    deserializer._references = collections.ChainMap({}, self.models._models)
    try:
        patch = deserializer.deserialize(patch_json)
    except UnknownReferenceError as error:
        if self.models.seen(error.id):
            log.debug(
                "Dropping a patch that names a model the document no longer has: %s", error.id
            )
            return
        raise
    for event in patch["events"]:
        DocumentPatchedEvent.handle_event(self, event, setter)
    self.models.flush_synced(lambda model: not deserializer.has_ref(model))


def _remembered(owner: type, method):
    # Each class's method remembers its own answer: those of subclasses call
    # their base's through super().
    def _may_have_unstable_default(self) -> bool:
        memo = self.__dict__.setdefault("_vizmm_may_have_unstable_default", {})
        try:
            return memo[owner]
        except KeyError:
            answer = memo[owner] = method(self)
            return answer

    _may_have_unstable_default.__doc__ = method.__doc__
    _may_have_unstable_default._vizmm_original = method
    return _may_have_unstable_default


#: Values Bokeh's ``copy`` of a default gives back unchanged, and that no one can mutate.
_IMMUTABLE = (type(None), bool, int, float, str)

#: The containers a default can be prepared into, and the plain ones it can be given as.
_CONTAINERS = (PropertyValueList, PropertyValueDict, PropertyValueSet, list, dict, set)

_NOT_KEPT = False  # a memo entry: Bokeh's own method answers for this default


def _immutable(value: Any) -> bool:
    return type(value) in _IMMUTABLE or (
        type(value) is tuple and all(_immutable(item) for item in value)
    )


def themed_default(
    self: Property, cls: type[HasProps], name: str, theme_overrides, *, no_eval: bool = False
):
    """``Property.themed_default``, prepared once per class and name where that is the same.

    The same value as Bokeh's: a theme's value, and a default that is made by
    a function or is neither immutable nor an empty container, are Bokeh's
    every time. An immutable default (after Bokeh's copy, validation and
    transform: the same every time) is returned again; an empty container
    default is a new empty container of the type Bokeh made (so no two owners
    share one). Validation being on or off is part of what is remembered, as
    it may change what Bokeh prepares.
    """
    original = _ORIGINAL["Property.themed_default"]
    if theme_overrides is not None and name in theme_overrides:
        return original(self, cls, name, theme_overrides, no_eval=no_eval)
    key = (cls, name, no_eval, validation_on())
    memo = self.__dict__.get("_vizmm_themed_defaults")
    if memo is None:
        memo = self.__dict__["_vizmm_themed_defaults"] = {}
    make = memo.get(key)
    if make is not None:
        return (
            make()
            if make is not _NOT_KEPT
            else original(self, cls, name, theme_overrides, no_eval=no_eval)
        )
    value = original(self, cls, name, theme_overrides, no_eval=no_eval)
    overrides = cls._overridden_defaults()
    raw = overrides[name] if name in overrides else self._default
    if callable(raw):
        memo[key] = _NOT_KEPT
    elif _immutable(value):
        memo[key] = lambda: value
    elif (
        type(value) in _CONTAINERS
        and type(raw) in _CONTAINERS
        and len(value) == 0
        and len(raw) == 0
    ):
        memo[key] = type(value)
    else:
        memo[key] = _NOT_KEPT
    return value


def _property_classes() -> list[type]:
    import bokeh.models  # noqa: F401 - every property class Bokeh's models use

    seen, todo = [], [Property]
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.append(cls)
            todo.extend(cls.__subclasses__())
    return seen


def _unstable_default_owners() -> dict[type, Any]:
    """Bokeh's property classes that define ``_may_have_unstable_default``, in a fixed order."""
    owners = {
        cls: cls.__dict__["_may_have_unstable_default"]
        for cls in _property_classes()
        if "_may_have_unstable_default" in cls.__dict__ and cls.__module__.startswith("bokeh.")
    }
    return dict(sorted(owners.items(), key=lambda kv: f"{kv[0].__module__}.{kv[0].__qualname__}"))


def applied() -> list[str]:
    """The speed-ups in effect in this process (names of the methods replaced)."""
    return sorted(_ORIGINAL)


#: The speed-ups that replace one method each, in the order they are applied:
#: (name in KNOWN, class, attribute, replacement, the methods whose source is
#: checked with it because the replacement relies on them: names of the
#: class's other methods, or other classes' functions themselves).
_REPLACED = (
    (
        "HasProps.query_properties_with_values",
        HasProps,
        "query_properties_with_values",
        query_properties_with_values,
        (),
    ),
    (
        "Property.themed_default",
        Property,
        "themed_default",
        themed_default,
        ("_raw_default", "_copy_default"),
    ),
    ("HasProps.themed_values", HasProps, "themed_values", themed_values, ()),
    ("HasProps.__init__", HasProps, "__init__", has_props_init, ()),
    (
        "PropertyDescriptor.__set__",
        PropertyDescriptor,
        "__set__",
        descriptor_set,
        ("_set", "_trigger"),
    ),
    ("DataSpec.to_serializable", DataSpec, "to_serializable", dataspec_to_serializable, ()),
    (
        "patch_doc.create",
        patch_doc,
        "create",
        classmethod(patch_doc_create),
        (
            Serializer.__init__,
            Serializer.has_ref,
            Serializer.get_ref,
            Serializer.add_ref,
            Serializer.encode,
            DocumentModelManager.synced_references.fget,
            DocumentModelManager.flush_synced,
        ),
    ),
    (
        "Document.apply_json_patch",
        Document,
        "apply_json_patch",
        apply_json_patch,
        (
            Deserializer.__init__,
            Deserializer.has_ref,
            Deserializer._decode_ref,
            Deserializer._decode_object_ref,
        ),
    ),
)


def _apply_replaced(name: str, owner: type, attribute: str, replacement, checked) -> bool:
    """Replace one method where its source is the known one; whether it is replaced."""
    if name in _ORIGINAL:
        return True
    others = (getattr(owner, other) if isinstance(other, str) else other for other in checked)
    if _digest(getattr(owner, attribute), *others) != KNOWN[name]:
        return False
    # as the class holds it (a classmethod stays one when it is put back)
    _ORIGINAL[name] = inspect.getattr_static(owner, attribute)
    setattr(owner, attribute, replacement)
    return True


def apply() -> list[str]:
    """Apply the speed-ups (once per process); the names of those that were not.

    Returns
    -------
    list of str
        The Bokeh methods left as they are because their source is not the
        one these speed-ups were written against (empty when all applied).
    """
    skipped = []
    for entry in _REPLACED[:1]:
        if not _apply_replaced(*entry):
            skipped.append(entry[0])
    name = "Property._may_have_unstable_default"
    if name not in _ORIGINAL:
        owners = _unstable_default_owners()
        if _digest(*owners.values()) == KNOWN[name]:
            _ORIGINAL[name] = owners
            for cls, method in owners.items():
                cls._may_have_unstable_default = _remembered(cls, method)
        else:
            skipped.append(name)
    for entry in _REPLACED[1:]:
        if not _apply_replaced(*entry):
            skipped.append(entry[0])
    return skipped


def remove() -> None:
    """Put Bokeh's own methods back (benchmarks compare both in one run)."""
    owners = _ORIGINAL.pop("Property._may_have_unstable_default", None)
    for cls, method in (owners or {}).items():
        cls._may_have_unstable_default = method
    for name, owner, attribute, _, _ in _REPLACED:
        original = _ORIGINAL.pop(name, None)
        if original is not None:
            setattr(owner, attribute, original)
