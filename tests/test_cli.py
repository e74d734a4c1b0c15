"""Smoke tests of the ``vizmm`` command: record, info, table, --help."""

import os

import numpy as np
import pytest

import vizmm
from vizmm.cli import build_parser, main


@pytest.fixture(scope="module")
def fig58_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "fig58.vizmm"
    assert (
        main(
            [
                "record",
                "--width",
                "4",
                "--tile-width",
                "2",
                "--kernel",
                "tiled",
                "--backend",
                "simulator",
                "-q",
                "-o",
                str(path),
            ]
        )
        == 0
    )
    return path


def test_record_writes_a_trace(tmp_path, capsys):
    out = tmp_path / "t.vizmm"
    code = main(
        [
            "record",
            "--shape",
            "5,3,4",
            "--tile-width",
            "2",
            "--kernel",
            "general",
            "--backend",
            "simulator",
            "--seed",
            "3",
            "-o",
            str(out),
        ]
    )
    assert code == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0].startswith("estimate: trace ~")  # the estimate comes first
    assert "simulator" in lines[0]
    assert lines[-1].startswith(f"wrote {out}")
    assert os.listdir(tmp_path) == ["t.vizmm"]
    trace = vizmm.load(out)
    assert trace.shape == (5, 3, 4) and trace.kernel == "general" and trace.tile_width == 2
    assert trace.backend == "simulator" and trace.meta["seed"] == 3
    np.testing.assert_array_equal(trace.P, trace.M.astype(np.float64) @ trace.N)


def test_record_window(tmp_path, capsys):
    out = tmp_path / "w.vizmm"
    assert (
        main(
            [
                "record",
                "--width",
                "7",
                "-t",
                "2",
                "--backend",
                "simulator",
                "-q",
                "--window",
                "3,3",
                "--window",
                "0,1",
                "--window",
                "3,3",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert capsys.readouterr().out == ""  # -q: nothing but errors
    trace = vizmm.load(out)
    assert trace.detail_blocks.tolist() == [[3, 3], [0, 1]]


def test_record_draws_no_progress_bar_where_none_is_seen(tmp_path, capsys):
    # stderr captured, not a terminal: no bar (tests/test_first_run.py: one on a terminal)
    out = tmp_path / "p.vizmm"
    assert (
        main(["record", "--width", "4", "-t", "2", "--backend", "simulator", "-o", str(out)]) == 0
    )
    err = capsys.readouterr().err
    assert "/4 [" not in err and "block/s" not in err


def test_record_max_bytes_suffix(tmp_path):
    out = tmp_path / "m.vizmm"
    assert (
        main(
            [
                "record",
                "--width",
                "2",
                "-t",
                "2",
                "--backend",
                "simulator",
                "-q",
                "--max-bytes",
                "1M",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert out.exists()


def test_info(fig58_file, capsys):
    assert main(["info", str(fig58_file)]) == 0
    out = capsys.readouterr().out
    assert "fig58.vizmm" in out
    assert "tiled" in out and "TILE_WIDTH 2" in out
    assert "M 4x4 . N 4x4" in out
    assert "simulator" in out
    assert "created" in out  # the date of the recording


def test_info_imports_only_the_trace_layer(fig58_file):
    # `vizmm info` reads a manifest: a fresh interpreter running it must not
    # import the replay, the renderers, the exporters, numba or a GUI library.
    import subprocess
    import sys

    code = (
        "import sys; from vizmm.cli import main; code = main(['info', sys.argv[1]]); "
        "print(sorted(sys.modules), file=sys.stderr); sys.exit(code)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(fig58_file)], capture_output=True, text=True, check=True
    )
    assert "TILE_WIDTH 2" in done.stdout
    loaded = set(eval(done.stderr.strip().splitlines()[-1]))  # noqa: S307 - our own output
    heavy = ("bokeh", "panel", "PIL", "numba", "imageio", "pandas")
    ours = ("vizmm.replay", "vizmm.render", "vizmm.export", "vizmm.analysis.occupancy")
    assert not {m for m in loaded if m.split(".")[0] in heavy}
    assert not {m for m in loaded if m.startswith(ours)}


def test_table(fig58_file, capsys):
    assert main(["table", str(fig58_file), "--block", "0,0"]) == 0
    out = capsys.readouterr().out
    assert "M₀,₃ → Mds₀,₁" in out  # Fig. 5.8, thread_{0,1}, phase 1
    assert "Phase 0" in out and "Phase 1" in out
    assert "Pvalue₁,₁ += Mds₁,₀*Nds₀,₁ + Mds₁,₁*Nds₁,₁" in out


def test_table_ascii_one_phase(fig58_file, capsys):
    assert (
        main(["table", str(fig58_file), "--block", "1,0", "--phase", "1", "--ascii", "--book"]) == 0
    )
    out = capsys.readouterr().out
    out.encode("ascii")  # nothing but ASCII
    assert "M[2,2] -> Mds[0,0]" in out  # block_{1,0}: Row = 2 + ty, phase 1: col 2 + tx
    assert "Phase 0" not in out


def test_table_default_block(fig58_file, capsys):
    assert main(["table", str(fig58_file)]) == 0
    assert "thread₀,₀" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["record", "--help"], ["info", "--help"], ["table", "--help"], ["--version"]],
)
def test_help(argv, capsys):
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: vizmm") or out.startswith("vizmm ")


def test_help_lists_every_subcommand(capsys):
    main(["--help"])
    out = capsys.readouterr().out
    for name in ("record", "info", "table"):
        assert name in out


def test_parser_has_subcommands():
    parser = build_parser()
    args = parser.parse_args(["table", "x.vizmm", "--block", "1,2", "--ascii"])
    assert args.block == (1, 2) and args.ascii and callable(args.func)


def test_serve_uses_the_c_allocator_unless_told(monkeypatch, capsys):
    """``vizmm serve`` starts the server with PYTHONMALLOC=malloc; a PYTHONMALLOC set is kept."""
    monkeypatch.delenv("PYTHONMALLOC", raising=False)
    monkeypatch.delenv("PYTHONINTMAXSTRDIGITS", raising=False)
    assert main(["serve", "--dry-run"]) == 0
    words = capsys.readouterr().out.split()
    # as a shell takes it: the variables, then the command
    assert words[:2] == ["PYTHONMALLOC=malloc", "PYTHONINTMAXSTRDIGITS=65536"]
    assert words[2:6] == [words[2], "-P", "-m", "panel"] and os.path.isfile(words[2])
    monkeypatch.setenv("PYTHONMALLOC", "pymalloc")
    assert main(["serve", "--dry-run"]) == 0
    words = capsys.readouterr().out.split()
    assert words[3:5] == ["-m", "panel"] and not any("PYTHONMALLOC" in w for w in words)
