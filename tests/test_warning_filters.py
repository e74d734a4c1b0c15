"""pyproject.toml's warning filters: vizmm's deprecations fail a test, a library's own do not.

Each case runs pytest in a subprocess on a tiny test file, with the options
of our pyproject.toml (``-c``), so the filters under test are the ones the
suite runs with. A filter's module is matched against the module a warning
is attributed to: the frame its ``stacklevel`` points at.
"""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# A library of someone else's: it warns about its own code, as numba-cuda's
# ``np.timedelta64("nat")`` makes NumPy 2.5 warn when numba.cuda is imported.
SOMELIB = """
import warnings

warnings.warn("somelib uses something deprecated at import", DeprecationWarning)


def old():
    warnings.warn("somelib.old calls something deprecated", DeprecationWarning)
    return 1


def loud():
    warnings.warn("somelib has something to say", UserWarning)
    return 1
"""

CASES = {
    # vizmm calls a function that warns as NumPy's deprecated functions do
    # (stacklevel=2: the warning is the caller's, here vizmm.trace.units).
    "vizmm calls something deprecated": (
        """
        import types
        import warnings

        import vizmm.trace.units as units


        def isfinite(x):
            warnings.warn("isfinite is deprecated", DeprecationWarning, stacklevel=2)
            return True


        def test_it(monkeypatch):
            monkeypatch.setattr(units, "math", types.SimpleNamespace(isfinite=isfinite))
            assert units.format_value(12345.25) == "1.235e+04"
        """,
        "DeprecationWarning: isfinite is deprecated",
    ),
    "a library's deprecation at import, during collection": (
        """
        import somelib


        def test_it():
            assert somelib.old() == 1
        """,
        None,
    ),
    "a library's warning that is not a deprecation": (
        """
        import somelib


        def test_it():
            assert somelib.loud() == 1
        """,
        "UserWarning: somelib has something to say",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_warning_filters(case, tmp_path):
    body, failure = CASES[case]
    (tmp_path / "somelib.py").write_text(SOMELIB)
    (tmp_path / "test_tiny.py").write_text(textwrap.dedent(body))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-c",
            str(REPO / "pyproject.toml"),
            "--rootdir",
            str(tmp_path),
            "-p",
            "no:cacheprovider",
            "-q",
            "test_tiny.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    if failure is None:
        assert proc.returncode == 0 and "1 passed" in out, out[-3000:]
        # shown in the summary, not hidden
        assert "somelib uses something deprecated at import" in out, out[-3000:]
        assert "somelib.old calls something deprecated" in out, out[-3000:]
    else:
        assert proc.returncode == 1 and "1 failed" in out, out[-3000:]
        assert f"FAILED test_tiny.py::test_it - {failure}" in out, out[-3000:]
