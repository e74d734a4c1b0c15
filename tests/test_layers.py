"""The folders are the layers: each imports only what its room allows.

kernels -> record -> trace -> replay / analysis -> render -> export / cli -> apps;
serve (what a server process holds: the catalogue, the class store, caches, memory,
the server command) beside render, for the CLI and apps only.
The rules are read from the source with ``ast`` (every ``import`` and
``from ... import`` anywhere in a file, inside functions too), so a lazy import
cannot slip past them.
"""

import ast
import math
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    """Absolute module names imported by one file (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    if parts[0] == "kernels":
        parts[0] = "vizmm_kernels"
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return out


def _files(folder: str):
    return sorted((REPO / folder).rglob("*.py"))


def _violations(folder: str, forbidden: tuple[str, ...]) -> list[str]:
    bad = []
    for path in _files(folder):
        for mod in _imports(path):
            if any(mod == f or mod.startswith(f + ".") for f in forbidden):
                bad.append(f"{path.relative_to(REPO)} imports {mod}")
    return bad


def test_the_rules_see_imports_inside_functions(tmp_path):
    # The oracle of the rule itself: a lazy import is found.
    f = REPO / "vizmm" / "record" / "launcher.py"
    assert "vizmm_kernels" in _imports(f)  # imported inside launch()


def test_kernels_import_nothing_of_vizmm():
    assert _violations("kernels", ("vizmm",)) == []


def test_only_record_imports_numba():
    bad = [
        v
        for v in _violations("vizmm", ("numba", "numba_cuda_mlir", "llvmlite", "vizmm_kernels"))
        if not v.startswith("vizmm/record/")
    ]
    assert bad == []


@pytest.mark.parametrize(
    "folder, forbidden",
    [
        (
            "vizmm/trace",
            (
                "vizmm.serve",
                "vizmm.record",
                "vizmm.replay",
                "vizmm.analysis",
                "vizmm.render",
                "vizmm.export",
                "vizmm.cli",
                "apps",
                "bokeh",
                "panel",
                "PIL",
            ),
        ),
        (
            "vizmm/replay",
            (
                "vizmm.serve",
                "vizmm.record",
                "vizmm.render",
                "vizmm.export",
                "vizmm.cli",
                "apps",
                "bokeh",
                "panel",
                "PIL",
            ),
        ),
        (
            "vizmm/analysis",
            (
                "vizmm.serve",
                "vizmm.record",
                "vizmm.render",
                "vizmm.export",
                "vizmm.cli",
                "apps",
                "bokeh",
                "panel",
                "PIL",
            ),
        ),
        (
            "vizmm/render",
            ("vizmm.record", "vizmm.serve", "vizmm.export", "vizmm.cli", "apps", "panel"),
        ),
        (
            # may import vizmm.trace, vizmm.replay, vizmm.analysis, vizmm.record;
            # nothing that draws
            "vizmm/serve",
            (
                "vizmm.render",
                "vizmm.export",
                "vizmm.cli",
                "apps",
                "bokeh",
                "panel",
                "PIL",
            ),
        ),
        (
            "vizmm/record",
            (
                "vizmm.serve",
                "vizmm.replay",
                "vizmm.analysis",
                "vizmm.render",
                "vizmm.export",
                "vizmm.cli",
                "apps",
                "bokeh",
                "panel",
                "PIL",
            ),
        ),
    ],
)
def test_each_layer_imports_only_what_it_may(folder, forbidden):
    assert _violations(folder, forbidden) == []


def test_kernel_codes_are_the_trace_enums():
    # The kernels write plain integers (they know nothing of vizmm); the trace
    # names them. Same names, same values, both ways.
    from vizmm.trace import Access, PWrite
    from vizmm_kernels import codes

    for member in Access:
        assert getattr(codes, member.name) == member.value
    assert {n: getattr(codes, n) for n in Access.__members__} == {m.name: m.value for m in Access}
    assert PWrite.NOT_RECORDED == codes.NOT_RECORDED
    # The field orders of the record arrays agree with the trace's tables.
    from vizmm.trace import BLOCK_FIELDS

    assert len(BLOCK_FIELDS) == codes.BLK_FIELDS
    assert BLOCK_FIELDS.index("smid") == codes.BLK_SMID
    assert BLOCK_FIELDS.index("t0_ns") == codes.BLK_T0
    assert BLOCK_FIELDS.index("t1_ns") == codes.BLK_T1
    assert BLOCK_FIELDS.index("clock0") == codes.BLK_CLK0
    assert BLOCK_FIELDS.index("clock1") == codes.BLK_CLK1
    assert BLOCK_FIELDS.index("seq") == codes.BLK_SEQ


def test_one_kernel_list():
    import vizmm_kernels
    from vizmm.trace import KERNELS, MAX_TILE_WIDTH

    assert tuple(vizmm_kernels.KERNEL_NAMES) == tuple(KERNELS)
    assert vizmm_kernels.MAX_TILE_WIDTH == MAX_TILE_WIDTH


def test_launch_shape_is_the_books_arithmetic():
    from vizmm.trace import LaunchError, LaunchShape

    # Section 5.5: ceil(Width / TILE_WIDTH) blocks per dimension and phases.
    s = LaunchShape.make("boundary", 3, 3, 3, 2)
    assert s.grid == (2, 2) and s.n_phases == 2 and s.padded == (4, 4, 4)
    g = LaunchShape.make("general", 37, 29, 45, 8)
    assert g.grid == (math.ceil(37 / 8), math.ceil(45 / 8)) and g.n_phases == math.ceil(29 / 8)
    assert LaunchShape.make("naive", 4, 4, 4, 2).n_phases == 0
    for bad in (0, 33, 2.0, True, "2"):
        with pytest.raises(LaunchError, match="TILE_WIDTH"):
            LaunchShape.make("tiled", 4, 4, 4, bad)
    with pytest.raises(LaunchError, match="square"):
        LaunchShape.make("tiled", 4, 5, 4, 2)
    with pytest.raises(LaunchError, match="unknown kernel"):
        LaunchShape.make("tiles", 4, 4, 4, 2)
    # Sizes alone: a launch far too large to list is described instantly.
    huge = LaunchShape.make("boundary", 10**6, 10**6, 10**6, 1)
    assert huge.n_blocks == 10**12


def test_gif_frames_and_dashboard_print_a_value_alike(record_sim, monkeypatch):
    from PIL import ImageDraw

    from vizmm.render.bokeh_scene import frame_columns
    from vizmm.render.pillow import FrameRenderer
    from vizmm.replay import Replay

    M = np.array([[0.5, 2], [1, 3]], np.float32)
    N = np.array([[2, 1], [0.25, 4]], np.float32)
    trace = record_sim(M=M, N=N, tile_width=2, kernel="tiled")
    replay = Replay(trace, (0, 0))
    frame = replay.frame(len(replay) - 1)
    cols = frame_columns(frame, trace)
    drawn = []
    real_text = ImageDraw.ImageDraw.text

    def spy(self, xy, text, *args, **kwargs):
        drawn.append(str(text))
        return real_text(self, xy, text, *args, **kwargs)

    monkeypatch.setattr(ImageDraw.ImageDraw, "text", spy)
    FrameRenderer(trace, size=(1280, 720)).render(frame)
    # By hand: P = M @ N = [[0.5*2 + 2*0.25, 0.5 + 8], [2 + 0.75, 1 + 12]].
    want = ["1.5", "8.5", "2.75", "13"]
    assert cols["P_pvalue"]["text"] == want
    assert cols["threads"]["pvalue"] == want
    assert cols["M"]["text"] == ["0.5", "2", "1", "3"]
    text = "\n".join(drawn)
    assert "13" in text and "13.0" not in text  # the GIF prints 13 as the dashboard does
    assert "2.75" in text and "0.25" in text


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_uses(source: str, filename: str = "page.py") -> list[str]:
    """Private names (``_x``) of vizmm or vizmm_apps modules that a page's source uses.

    Imported (``from vizmm_apps.dashboard import _equivalent``, ``import
    vizmm._x``) or reached as an attribute of something imported from them
    (``dashboard._equivalent``, ``Replay._cache``), anywhere in the file.
    """
    ours = ("vizmm", "vizmm_apps", "apps")
    tree = ast.parse(source)
    bound: set[str] = set()  # names the file binds to vizmm / vizmm_apps objects
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:  # a relative import inside apps/
                mod = "vizmm_apps" + (f".{mod}" if mod else "")
            if mod.split(".")[0] not in ours:
                continue
            for a in node.names:
                if any(_is_private(p) for p in mod.split(".")) or _is_private(a.name):
                    bad.append(f"{filename}:{node.lineno} imports {a.name} from {mod}")
                bound.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] not in ours:
                    continue
                if any(_is_private(p) for p in a.name.split(".")):
                    bad.append(f"{filename}:{node.lineno} imports {a.name}")
                bound.add(a.asname or a.name.split(".")[0])
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in bound:
                bad.append(f"{filename}:{node.lineno} uses {ast.unparse(node)}")
    return bad


def test_the_private_name_rule_finds_what_broke_the_quiz():
    # The oracle of the rule itself: the import that broke "Ask a question here"
    # (issue 28), a relative one, a private module and an attribute reach are found;
    # dunders and the page's own names are not.
    page = (
        "import vizmm.replay as rp\n"
        "from vizmm_apps import dashboard\n"
        "from vizmm import __version__\n"
        "def ask():\n"
        "    from vizmm_apps.dashboard import _equivalent\n"
        "    from .parts import _memory\n"
        "    from vizmm.record import _probe\n"
        "    return dashboard._states, rp.Replay._cache, _own(), dashboard.DashboardState\n"
        "def _own():\n"
        "    return 1\n"
    )
    assert _private_uses(page) == [
        "page.py:5 imports _equivalent from vizmm_apps.dashboard",
        "page.py:6 imports _memory from vizmm_apps.parts",
        "page.py:7 imports _probe from vizmm.record",
        "page.py:8 uses dashboard._states",
        "page.py:8 uses rp.Replay._cache",
    ]


def test_pages_use_no_private_names_of_other_modules():
    bad = []
    for path in _files("apps"):
        bad += _private_uses(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    assert bad == []


def _private_reaches(source: str, filename: str = "page.py") -> list[str]:
    """Private members (``x._y``) reached on anything but ``self`` or ``cls``."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                bad.append(f"{filename}:{node.lineno} uses {ast.unparse(node)}")
    return bad


def test_pages_reach_no_private_member_of_another_object():
    # what the question mode once read of the dashboard, and what it may read
    page = "def f(self, dash):\n    return self.dash._scene, dash._served, self._own, cls._esm\n"
    assert _private_reaches(page) == [
        "page.py:2 uses self.dash._scene",
        "page.py:2 uses dash._served",
    ]
    bad = []
    for path in _files("apps"):
        bad += _private_reaches(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    assert bad == []


_OURS = ("vizmm", "vizmm_apps", "apps", "vizmm_kernels")


def _private_library_imports(source: str, filename: str = "module.py") -> list[str]:
    """Private names of a library (Bokeh, Panel, Tornado, any package not ours) imported.

    A name ``_x`` imported from a library module, or a library module whose
    path has a ``_x`` part (``bokeh.plotting._renderer``), in any ``import``
    of the file (inside functions too). Our own packages are the other rule's
    (``vizmm_kernels._target`` is how the kernels choose their compiler);
    attributes are not imports (a page reading a widget's ``_names`` is not
    this rule's).
    """
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and not node.level:
            mod = node.module or ""
            if mod.split(".")[0] in _OURS:
                continue
            for a in node.names:
                if any(_is_private(p) for p in mod.split(".")) or _is_private(a.name):
                    bad.append(f"{filename}:{node.lineno} imports {a.name} from {mod}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] not in _OURS and any(_is_private(p) for p in parts):
                    bad.append(f"{filename}:{node.lineno} imports {a.name}")
    return bad


def test_the_library_rule_finds_bokehs_private_renderer_helper():
    # The oracle of the rule itself: the import of Bokeh's private pop_visuals that
    # add_glyph had (issue 28), a private name of Panel and Tornado, a private module
    # imported whole; dunders, our own private modules and attribute reads are not.
    source = (
        "import bokeh.models\n"
        "import bokeh.core._templates as t\n"
        "from bokeh import __version__\n"
        "from vizmm_kernels import _target\n"
        "from vizmm_kernels._hw import clock64\n"
        "def add_glyph(fig, tabs):\n"
        "    from bokeh.plotting._renderer import pop_visuals\n"
        "    from panel.layout.base import _row\n"
        "    from tornado.ioloop import _Selectable\n"
        "    return tabs._names, pop_visuals\n"
    )
    assert _private_library_imports(source) == [
        "module.py:2 imports bokeh.core._templates",
        "module.py:7 imports pop_visuals from bokeh.plotting._renderer",
        "module.py:8 imports _row from panel.layout.base",
        "module.py:9 imports _Selectable from tornado.ioloop",
    ]


def test_no_private_names_of_libraries_are_imported():
    bad = []
    for folder in ("vizmm", "apps"):
        for path in _files(folder):
            text = path.read_text(encoding="utf-8")
            bad += _private_library_imports(text, str(path.relative_to(REPO)))
    assert bad == []


def test_no_cache_is_keyed_on_a_trace():
    # A functools cache keyed on a trace keeps the trace alive past the server's
    # catalogue; what is worked out from a trace is kept on it (vizmm.trace.derived).
    bad = []
    for folder in ("vizmm", "apps"):
        for path in _files(folder):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                cached = any(
                    "cache" in ast.unparse(d).split("(")[0].split(".")[-1]
                    for d in node.decorator_list
                )
                args = node.args.posonlyargs + node.args.args
                first = args[0] if args else None
                if cached and first is not None:
                    note = ast.unparse(first.annotation) if first.annotation else ""
                    if first.arg == "trace" or note.endswith("Trace"):
                        bad.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}")
    assert bad == []


def _on_clicks(source: str, filename: str = "page.py") -> list[str]:
    """Calls of ``x.on_click(...)``: a button wired around ``parts.on_press``."""
    return [
        f"{filename}:{node.lineno} calls {ast.unparse(node.func)}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "on_click"
    ]


def test_the_button_rule_finds_a_bare_on_click():
    page = "b = pn.widgets.Button(label='▶')\nb.on_click(lambda e: state.next())\n"
    assert _on_clicks(page) == ["page.py:2 calls b.on_click"]
    assert _on_clicks("on_press(b, state.next)\n") == []


def test_every_button_is_wired_through_on_press():
    # Panel may run a bare on_click without the document's lock (apps/ARCHITECTURE.md)
    bad = []
    for path in _files("apps"):
        if path.name != "parts.py":
            bad += _on_clicks(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    assert bad == []
