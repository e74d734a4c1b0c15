"""Less work for Bokeh on every new page: four speed-ups of its property system.

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

All four replace a method of Bokeh, so they are applied only to the Bokeh code
they were written against: each checks that the method it replaces is still
the one it knows (a hash of its source). Another Bokeh version leaves the
methods as they are (:func:`apply` says which were not applied), and every
page is still right, only slower.

``vizmm serve`` applies them in each server process (``apps/preload.py``);
nothing else in vizmm does.
"""

from __future__ import annotations

import hashlib
import inspect
from typing import Any

from bokeh.core.has_props import HasProps
from bokeh.core.property.bases import Property, validation_on
from bokeh.core.property.singletons import Undefined
from bokeh.core.property.wrappers import (
    PropertyValueContainer,
    PropertyValueDict,
    PropertyValueList,
    PropertyValueSet,
)

__all__ = ["apply", "applied", "remove", "KNOWN"]

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


def apply() -> list[str]:
    """Apply the speed-ups (once per process); the names of those that were not.

    Returns
    -------
    list of str
        The Bokeh methods left as they are because their source is not the
        one these speed-ups were written against (empty when all applied).
    """
    skipped = []
    name = "HasProps.query_properties_with_values"
    if name not in _ORIGINAL:
        original = HasProps.query_properties_with_values
        if _digest(original) == KNOWN[name]:
            _ORIGINAL[name] = original
            HasProps.query_properties_with_values = query_properties_with_values
        else:
            skipped.append(name)
    name = "Property._may_have_unstable_default"
    if name not in _ORIGINAL:
        owners = _unstable_default_owners()
        if _digest(*owners.values()) == KNOWN[name]:
            _ORIGINAL[name] = owners
            for cls, method in owners.items():
                cls._may_have_unstable_default = _remembered(cls, method)
        else:
            skipped.append(name)
    name = "Property.themed_default"
    if name not in _ORIGINAL:
        methods = (Property.themed_default, Property._raw_default, Property._copy_default)
        if _digest(*methods) == KNOWN[name]:
            _ORIGINAL[name] = Property.themed_default
            Property.themed_default = themed_default
        else:
            skipped.append(name)
    name = "HasProps.themed_values"
    if name not in _ORIGINAL:
        if _digest(HasProps.themed_values) == KNOWN[name]:
            _ORIGINAL[name] = HasProps.themed_values
            HasProps.themed_values = themed_values
        else:
            skipped.append(name)
    return skipped


def remove() -> None:
    """Put Bokeh's own methods back (benchmarks compare both in one run)."""
    original = _ORIGINAL.pop("HasProps.query_properties_with_values", None)
    if original is not None:
        HasProps.query_properties_with_values = original
    owners = _ORIGINAL.pop("Property._may_have_unstable_default", None)
    for cls, method in (owners or {}).items():
        cls._may_have_unstable_default = method
    original = _ORIGINAL.pop("Property.themed_default", None)
    if original is not None:
        Property.themed_default = original
    original = _ORIGINAL.pop("HasProps.themed_values", None)
    if original is not None:
        HasProps.themed_values = original
