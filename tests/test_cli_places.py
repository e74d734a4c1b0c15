"""The command line as a person meets it: a bad output, port, address or block is
said in one line with exit code 2 before any work, and estimates and advice are
in the words of the place the person is (issue 32, *Command line*)."""

import importlib.resources
import os
import re
import socket

import pytest

import vizmm
import vizmm.cli
import vizmm.export
from vizmm.cli import main
from vizmm.record import TooSlowError, TraceTooLargeError, admit
from vizmm.trace import LaunchShape, human_duration

FIG58 = str(importlib.resources.files("vizmm") / "data" / "fig5-8.vizmm")


def _unwritable_folder(tmp_path):
    """A folder nothing can be made in, for this user: a mode-0555 folder, or /proc for root."""
    if os.geteuid() == 0:  # root writes through a folder's mode; /proc takes no new files
        return "/proc"
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    return str(folder)


def _one_error_line(capsys) -> str:
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("vizmm: error: "), err
    assert "Traceback" not in err and out == ""
    return lines[0]


def test_export_to_an_unwritable_folder_fails_before_any_frame(tmp_path, capsys, monkeypatch):
    def no_work(*args, **kwargs):
        raise AssertionError("frames were drawn before the folder was checked")

    monkeypatch.setattr(vizmm.export, "export_bytes", no_work)
    folder = _unwritable_folder(tmp_path)
    out = os.path.join(folder, "w.gif")
    assert main(["export", FIG58, "-o", out]) == 2
    line = _one_error_line(capsys)
    assert f"cannot write {out}" in line and "not writable" in line
    assert not os.path.exists(out)


def test_record_to_an_unwritable_folder_fails_before_recording(tmp_path, capsys, monkeypatch):
    def no_work(*args, **kwargs):
        raise AssertionError("recorded before the folder was checked")

    monkeypatch.setattr(vizmm.cli, "record", no_work)
    folder = _unwritable_folder(tmp_path)
    out = os.path.join(folder, "t.vizmm")
    assert main(["record", "--width", "4", "-t", "2", "-b", "simulator", "-o", out]) == 2
    assert "not writable" in _one_error_line(capsys)


@pytest.fixture
def no_server(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the server was started")

    import vizmm.serve.command

    monkeypatch.setattr(vizmm.serve.command, "run_server", refuse)


@pytest.mark.parametrize("port", ["99999", "65536", "-1", "http"])
def test_serve_port_out_of_range(port, capsys, no_server):
    assert main(["serve", "--port", port]) == 2
    line = _one_error_line(capsys)
    assert "0 to 65535" in line and line.count("ERROR") == 0


def test_serve_port_in_use(capsys, no_server):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    line = _one_error_line(capsys)
    assert f"port {port}" in line and "in use" in line and "--port" in line


@pytest.mark.parametrize("address", ["192.0.2.1", "no-such-host.invalid"])
def test_serve_address_not_of_this_machine(address, capsys, no_server):
    # 192.0.2.1: TEST-NET-1 (RFC 5737), never an address of a machine
    assert main(["serve", "--address", address, "--port", "0"]) == 2
    line = _one_error_line(capsys)
    assert f"--address {address}" in line and "127.0.0.1" in line


def test_transactions_block_outside_the_grid_is_said_first(capsys):
    # Fig. 5.8: 4x4 matrices, TILE_WIDTH 2, a 2x2 grid
    assert main(["transactions", FIG58, "--block", "3,3"]) == 2
    line = _one_error_line(capsys)  # no totals printed before it
    assert "--block 3,3: block (3, 3) is outside the 2 x 2 grid" in line


def test_export_block_outside_the_grid(tmp_path, capsys):
    assert main(["export", FIG58, "--block", "2,0", "-o", str(tmp_path / "x.gif")]) == 2
    assert "is outside the 2 x 2 grid" in _one_error_line(capsys)
    assert not (tmp_path / "x.gif").exists()


@pytest.mark.parametrize(
    "seconds, text",
    [
        (3.25, "3.2 s"),
        (45, "45 s"),
        (90, "90 s"),
        (150, "2.5 min"),
        (3 * 3600, "3 h"),
        (36 * 3600, "1.5 days"),
        (15_378_000_000, "488 years"),  # the issue's ~15378000000.0 s: 15.378e9 / 31.536e6
    ],
)
def test_human_duration(seconds, text):
    assert human_duration(seconds) == text


def test_record_estimate_and_advice_in_cli_words(tmp_path, capsys):
    # 4000x4000 at TILE_WIDTH 2: 2000 x 2000 blocks, far over the 1 GiB default
    out = tmp_path / "big.vizmm"
    assert main(["record", "--width", "4000", "-t", "2", "-b", "simulator", "-o", str(out)]) == 2
    printed, err = capsys.readouterr()
    assert re.search(r"\d{4,}(\.\d)? s\b", printed) is None, printed  # no raw seconds
    assert "years" in printed or "days" in printed
    assert "--window BY,BX" in err and "--max-bytes" in err
    assert "window=[" not in err and "max_bytes" not in err
    assert not out.exists()


def test_advice_in_the_words_of_each_place():
    launch = LaunchShape("tiled", 4000, 4000, 4000, 2)
    with pytest.raises(TraceTooLargeError) as info:
        admit(launch, None, "simulator")
    exc = info.value
    assert "window=[(by, bx), ...]" in str(exc) and "max_bytes" in str(exc)  # the Python API
    assert "--window" in exc.words("cli") and "max_bytes" not in exc.words("cli")
    page = exc.words("page")
    assert "window blocks" in page and "--window" not in page and "window=[" not in page
    slow = TooSlowError(15_378_000_000, 600)
    assert "488 years" in slow.words("cli") and "10 min" in slow.words("cli")
    assert "--backend gpu" in slow.words("cli") and "backend='gpu'" in str(slow)
    with pytest.raises(ValueError, match="place must be one of"):
        exc.words("slides")
