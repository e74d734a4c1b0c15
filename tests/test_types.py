"""mypy over vizmm and vizmm_apps, configured by ``[tool.mypy]`` in pyproject.toml.

The pages live in the folder apps/ but install as ``vizmm_apps`` (and kernels/ as
``vizmm_kernels``); mypy finds modules by folder name, so it is run from a folder of
links that carry the installed names (``.mypy_cache/src``, ignored by git, next to
mypy's cache so that a second run only re-checks what changed).

``tests/mypy_known.txt`` lists the errors that were there when the check came in
(file, code and message, without line numbers); the list may only shrink: a new
error fails, and so does a listed one that is gone (delete its line).
"""

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / ".mypy_cache"
# installed name -> folder of the checkout
PACKAGES = {"vizmm": "vizmm", "vizmm_apps": "apps", "vizmm_kernels": "kernels"}
KNOWN = REPO / "tests" / "mypy_known.txt"
_ERROR = re.compile(r"^(?P<path>[^:\s]+\.py):\d+: error: (?P<msg>.*?)  \[(?P<code>[a-z-]+)\]$")


def _source_links() -> Path:
    src = CACHE / "src"
    src.mkdir(parents=True, exist_ok=True)
    for name, folder in PACKAGES.items():
        link, target = src / name, REPO / folder
        if link.is_symlink() and Path(os.readlink(link)) == target:
            continue
        if link.is_symlink() or link.exists():
            link.unlink(missing_ok=True)
        try:
            link.symlink_to(target, target_is_directory=True)
        except FileExistsError:  # another run made it meanwhile
            pass
    return src


def _mypy(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MYPYPATH": str(cwd)}
    cmd = [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml")]
    cmd += ["--cache-dir", str(CACHE), *args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=500)


def _errors(stdout: str) -> Counter:
    """``'path: [code] message'`` of each error, named by the file of the checkout."""
    found: Counter = Counter()
    for line in stdout.splitlines():
        m = _ERROR.match(line)
        if m:
            path = m["path"].replace("vizmm_apps/", "apps/", 1)
            found[f"{path}: [{m['code']}] {m['msg']}"] += 1
    return found


def test_vizmm_and_its_pages_type_check():
    done = _mypy(_source_links(), "-p", "vizmm", "-p", "vizmm_apps")
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 2: mypy itself failed
    known = Counter(
        line.strip()
        for line in KNOWN.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    )
    found = _errors(done.stdout)
    new = sorted((found - known).elements())
    gone = sorted((known - found).elements())
    out = done.stdout.replace("vizmm_apps/", "apps/")
    new_lines = [line for line in out.splitlines() if any(n.split(": [")[0] in line for n in new)]
    assert not new, "mypy finds:\n" + "\n".join(new_lines)
    assert not gone, f"fixed: delete these lines from {KNOWN.name}:\n" + "\n".join(gone)


def test_the_check_finds_a_lazy_import_of_a_name_that_is_gone(tmp_path):
    # The bug this check is for: a page imported, inside an unannotated function, a
    # private helper that another module no longer had.
    pkg = tmp_path / "pages_under_test"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "dashboard.py").write_text("def index_at(step):\n    return step\n")
    (pkg / "quiz.py").write_text(
        "def ask(step):\n    from pages_under_test.dashboard import _equivalent\n\n"
        "    return _equivalent(step)\n"
    )
    done = _mypy(tmp_path, "-p", "pages_under_test")
    assert done.returncode == 1
    assert 'quiz.py:2: error: Module "pages_under_test.dashboard" has no attribute' in done.stdout
