"""The test suite on every Python that vizmm supports: ``nox`` (or ``nox -s tests-3.13``).

Each session makes a fresh virtual environment with that interpreter,
installs ``.[test]`` there (pip picks the newest NumPy, Panel and Bokeh that
Python allows), and runs the README's test command, ``pytest -q -n 2``; arguments
after ``--`` go to pytest (``nox -s tests-3.13 -- -x tests/test_cli.py``).
An interpreter that is not installed is skipped, not failed
(``error_on_missing_interpreters = False``).
"""

import nox

nox.options.error_on_missing_interpreters = False
nox.options.download_python = "never"  # the interpreters here, none downloaded

#: Every Python the README claims (``requires-python`` in pyproject.toml).
PYTHONS = ["3.11", "3.12", "3.13"]


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """Install ``.[test]`` and run ``pytest -q -n 2`` (the README's test command)."""
    session.install("-e", ".[test]")
    session.run("python", "-m", "pip", "list", "--format=freeze")  # the versions tested
    session.run("python", "-m", "pytest", "-q", "-n", "2", *session.posargs)


@nox.session(python=PYTHONS[-1])
def nonumba(session: nox.Session) -> None:
    """The test suite with no numba at all: vizmm's simulator records, checks and grades.

    ``.[test]`` brings numba-cuda (the PTX tests and the cross-check with
    Numba's simulator); it is uninstalled again, and the tests that need it
    skip (``pytest.importorskip``), so what remains is what a user without
    numba gets.
    """
    session.install("-e", ".[test]")
    session.run("python", "-m", "pip", "uninstall", "-y", "numba-cuda", "numba", "llvmlite")
    session.run("python", "-m", "pip", "list", "--format=freeze")
    session.run("python", "-m", "pytest", "-q", "-n", "2", *session.posargs)
