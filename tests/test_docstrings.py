"""numpydoc's own validator over every public function and method of vizmm and vizmm_apps.

Checked: GL08 (no docstring), PR01 (a parameter not documented), PR02 (a
documented parameter that does not exist), PR03 (parameters in another order).
Any violation fails: there is no list of tolerated ones (issue 28).
"""

import importlib
import inspect
import pkgutil
import warnings

from numpydoc.validate import validate

CHECKS = ("GL08", "PR01", "PR02", "PR03")


def _modules():
    # What importing says (a deprecated module's notice, a library's) is for other tests.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mods = [importlib.import_module(pkg) for pkg in ("vizmm", "vizmm_apps")]
        for root in list(mods):
            for info in pkgutil.walk_packages(root.__path__, root.__name__ + "."):
                if not info.name.endswith("__main__"):  # runs the command line when imported
                    mods.append(importlib.import_module(info.name))
    # a deprecated name may be the module itself under another name: each once
    return list({id(m): m for m in mods}.values())


def _public_callables():
    """``(qualified name, function)`` of the public functions and methods, each in its module."""
    for mod in _modules():
        for name, obj in vars(mod).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
                continue
            if inspect.isfunction(obj):
                yield f"{mod.__name__}.{name}", obj
            elif inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if attr.startswith("_"):
                        continue
                    if isinstance(member, staticmethod | classmethod):
                        member = member.__func__
                    if inspect.isfunction(member):
                        yield f"{mod.__name__}.{name}.{attr}", member


def _violations() -> list[str]:
    """``'qualified.name CODE: message'`` of each violation of :data:`CHECKS` found."""
    found = []
    for qualname, func in _public_callables():
        for code, message in validate(qualname)["errors"]:
            if code == "PR02" and _a_class_named_cls(func, message):
                continue
            if code in CHECKS:
                found.append(f"{qualname} {code}: {message}")
    return found


def _a_class_named_cls(func, message: str) -> bool:
    """numpydoc drops a first parameter named ``cls`` (a classmethod's) from every signature;
    a function whose ``cls`` is a class of students documents it and is not wrong."""
    params = list(inspect.signature(func).parameters)
    return message == "Unknown parameters {'cls'}" and params[:1] == ["cls"]


def _one_left_out(M, N, tile_width):
    """Multiply M and N.

    Parameters
    ----------
    M : ndarray of float32, (j, k)
    N : ndarray of float32, (k, l)
    """


def test_the_validator_sees_an_undocumented_parameter():
    # The oracle of the check itself: numpydoc names the one missing from Parameters.
    errors = dict(validate(f"{__name__}._one_left_out")["errors"])
    assert "tile_width" in errors["PR01"]
    assert "PR02" not in errors and "PR03" not in errors


def test_public_functions_document_their_parameters():
    found = _violations()
    assert not found, "numpydoc finds (numpydoc.validate):\n" + "\n".join(found)
