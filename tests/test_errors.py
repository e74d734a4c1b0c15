"""Bad input is refused with a clear message: by ``vizmm.record`` and by the ``vizmm`` command."""

import os

import numpy as np
import pytest
from conftest import gpu_usable

import vizmm
from vizmm import GPUUnavailableError, RecordError, TraceTooLargeError
from vizmm.cli import main

# ---------------------------------------------------------------- record()
BAD_RECORD_CALLS = [
    # (keyword arguments, a piece of the expected message)
    (dict(j=0, k=3, l=3, kernel="general"), "j must be a positive integer"),
    (dict(j=3, k=-1, l=3, kernel="general"), "k must be a positive integer"),
    (dict(j=3, k=3, l=-4, kernel="general"), "l must be a positive integer"),
    (dict(width=0), "width must be a positive integer"),
    (dict(width=-2), "width must be a positive integer"),
    (dict(width=2.5), "width must be a positive integer"),
    (dict(width=4, tile_width=0), "from 1 to 32"),
    (dict(width=4, tile_width=33), "from 1 to 32"),
    (dict(width=4, tile_width=2.0), "from 1 to 32"),
    (dict(j=3, k=4, l=5, kernel="boundary"), "use kernel='general'"),
    (dict(j=3, k=4, l=5, kernel="tiled"), "square"),
    (dict(j=3, k=3, l=4, kernel="naive"), "square"),
    (dict(width=4, kernel="strassen"), "unknown kernel 'strassen'"),
    (dict(width=4, backend="tpu"), "unknown backend 'tpu'"),
    (dict(width=4, window=[(5, 0)]), "outside the 2 x 2 grid"),
    (dict(width=4, window=[]), "window is empty"),
    (dict(width=4, window=["ab"]), "(by, bx) pairs"),
    (dict(), "give the sizes"),
    (dict(j=2, k=2), "give the sizes"),
]


@pytest.mark.parametrize("kwargs,message", BAD_RECORD_CALLS, ids=[m for _, m in BAD_RECORD_CALLS])
def test_record_refuses_bad_arguments(kwargs, message):
    with pytest.raises(RecordError) as info:
        vizmm.record(backend=kwargs.pop("backend", "simulator"), quiet=True, **kwargs)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_mismatched_inner_dimension():
    M = np.ones((3, 4))
    N = np.ones((5, 3))
    with pytest.raises(RecordError, match="same k"):
        vizmm.record(M=M, N=N, kernel="general", backend="simulator", quiet=True)


@pytest.mark.parametrize(
    "bad",
    [
        np.ones(3),
        np.ones((0, 3)),
        np.array([["a", "b"]]),
        np.array([[1.0, np.nan]]),
        np.array([[1e39]]),
    ],
)
# record() casts to float32 before checking, so 1e39 also raises NumPy's
# "overflow encountered in cast" warning on the way to its clear RecordError.
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_bad_matrices(bad):
    with pytest.raises(RecordError, match="M "):
        vizmm.record(
            M=bad,
            N=np.ones((bad.shape[-1] if bad.ndim == 2 else 3, 2)),
            kernel="general",
            backend="simulator",
            quiet=True,
        )


def test_sizes_disagree_with_matrices():
    with pytest.raises(RecordError, match="disagrees"):
        vizmm.record(j=4, M=np.ones((3, 3)), N=np.ones((3, 3)), backend="simulator", quiet=True)


@pytest.mark.skipif(gpu_usable(), reason="a GPU is usable here")
def test_gpu_backend_without_gpu():
    with pytest.raises(GPUUnavailableError) as info:
        vizmm.record(width=2, tile_width=2, backend="gpu", quiet=True)
    assert "simulator" in str(info.value)


def test_trace_too_large():
    est = vizmm.estimate(64, 64, 64, 4, "boundary")
    limit = est.bytes // 2
    with pytest.raises(TraceTooLargeError) as info:
        vizmm.record(width=64, tile_width=4, backend="simulator", max_bytes=limit, quiet=True)
    message = str(info.value)
    assert str(est.bytes) in message and str(limit) in message
    assert "window" in message  # says how to get under the limit
    assert isinstance(info.value, RecordError)


def test_estimate_refuses_bad_arguments():
    with pytest.raises(RecordError):
        vizmm.estimate(3, 3, 3, 0)
    with pytest.raises(RecordError):
        vizmm.estimate(3, 4, 5, 2, "boundary")


# --------------------------------------------------------------------- CLI
BAD_COMMANDS = [
    "record --width 0",
    "record --width -3",
    "record --shape 0,3,3 --kernel general",
    "record --shape 3,4 --kernel general",
    "record --shape 3,x,4 --kernel general",
    "record --width 4 --tile-width 0",
    "record --width 4 --tile-width 33",
    "record --width 4 --tile-width two",
    "record --shape 3,4,5 --kernel boundary",
    "record --width 4 --kernel strassen",
    "record --width 4 --backend tpu",
    "record --width 4 --window 9,9",
    "record --width 4 --window 1",
    "record --width 4 --max-bytes lots",
    "record --width 64 --tile-width 4 --max-bytes 1K",
    "record --width 4 --shape 4,4,4",
    "record --tile-width 2",
    "frobnicate",
    "",
]


@pytest.mark.parametrize("command", BAD_COMMANDS)
def test_cli_bad_input(command, tmp_path, capsys):
    out = tmp_path / "out.vizmm"
    argv = command.split() + (["-o", str(out)] if command.startswith("record") else [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("vizmm: error: ") and err.endswith("\n")
    assert err.count("\n") == 1, err  # one line, no traceback
    assert "Traceback" not in err
    assert os.listdir(tmp_path) == []  # no file, not even a temporary one


@pytest.mark.skipif(gpu_usable(), reason="a GPU is usable here")
def test_cli_gpu_without_gpu(tmp_path, capsys):
    out = tmp_path / "out.vizmm"
    assert main(["record", "--width", "2", "--backend", "gpu", "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "simulator" in err
    assert os.listdir(tmp_path) == []


def test_cli_too_large_names_estimate_and_limit(tmp_path, capsys):
    out = tmp_path / "out.vizmm"
    assert main(["record", "--width", "64", "-t", "4", "--max-bytes", "1000", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    est = vizmm.estimate(64, 64, 64, 4, "boundary")
    assert str(est.bytes) in err and "1000 bytes" in err
    assert os.listdir(tmp_path) == []


def test_cli_missing_output_folder(tmp_path, capsys):
    out = tmp_path / "no" / "such" / "out.vizmm"
    assert main(["record", "--width", "2", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and err.count("\n") == 1
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("content", [None, b"", b"not a trace", b"PK\x03\x04broken"])
@pytest.mark.parametrize("command", ["info", "table"])
def test_cli_bad_trace_file(command, content, tmp_path, capsys):
    path = tmp_path / "t.vizmm"
    if content is not None:
        path.write_bytes(content)
    assert main([command, str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vizmm: error: ") and err.count("\n") == 1
    assert "t.vizmm" in err


@pytest.fixture(scope="module")
def small_trace_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("t") / "t.vizmm"
    vizmm.record(width=3, tile_width=2, kernel="boundary", backend="simulator", quiet=True).save(
        path
    )
    return str(path)


@pytest.mark.parametrize(
    "args,message",
    [
        (["--block", "5,5"], "outside the 2 x 2 grid"),
        (["--block", "0"], "2 integers"),
        (["--phase", "7"], "phase 7"),
        (["--phase", "-1"], ">= 0"),
        (["--max-terms", "1"], "max-terms"),
    ],
)
def test_cli_table_bad_block_or_phase(small_trace_file, args, message, capsys):
    assert main(["table", small_trace_file, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
