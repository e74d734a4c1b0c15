"""What a served page may open: the presets, its uploads, admitted recordings and the given files.

A class server is reachable by every student. A ``file:`` key in a URL names
a file given to the server by whoever started it (``vizmm serve --traces``),
by name; it is never taken as a path. These tests ask for what a hostile
visitor would (a text file, a trace outside the given folder, a FIFO,
``/dev/zero``, a symlink to it inside the given folder) and check that the
page says one thing for all of them, shows nothing of any file, and that the
server's memory stays where it was.
"""

import os
import re
import shutil
import stat

import pytest
from served import read_status, vizmm_serve

import vizmm
from vizmm.serve.catalogue import Catalogue, parse_key

SECRET = "root:x:0:0 SECRET-LINE-OF-A-PRIVATE-FILE"
SHIPPED = os.path.join(os.path.dirname(vizmm.__file__), "data", "fig5-8.vizmm")
SHIPPED_11 = os.path.join(os.path.dirname(vizmm.__file__), "data", "fig5-11.vizmm")


@pytest.fixture
def disk(tmp_path):
    """A given folder (two traces, one in a subfolder, a link to /dev/zero), and things outside."""
    given = tmp_path / "lecture"
    (given / "week2").mkdir(parents=True)
    shutil.copy(SHIPPED, given / "fig58.vizmm")
    shutil.copy(SHIPPED_11, given / "week2" / "fig511.vizmm")
    os.symlink("/dev/zero", given / "zero.vizmm")
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "passwd").write_text(SECRET + "\n")
    shutil.copy(SHIPPED, outside / "other.vizmm")
    os.mkfifo(outside / "fifo.vizmm")
    return given, outside


def test_given_folder_is_offered_by_name(disk):
    given, _ = disk
    cat = Catalogue(given=[str(given)])
    names = cat.given()
    assert set(names) == {"fig58.vizmm", "week2/fig511.vizmm", "zero.vizmm"}
    assert cat.given_keys()["File: week2/fig511.vizmm"] == "file:week2/fig511.vizmm"
    # the trace read by name is the file's (Fig. 5.11: 3 x 3, TILE_WIDTH 2)
    trace = cat.get("file:week2/fig511.vizmm")
    assert (trace.shape, trace.tile_width) == ((3, 3, 3), 2)
    assert cat.label_of("file:week2/fig511.vizmm") == "File: week2/fig511.vizmm"
    assert str(given) not in cat.label_of("file:week2/fig511.vizmm")


def test_a_key_is_never_a_path(disk):
    given, outside = disk
    cat = Catalogue(given=[str(given)])
    keys = [
        f"file:{outside / 'passwd'}",
        f"file:{outside / 'other.vizmm'}",  # a real trace outside the given folder
        f"file:{outside / 'fifo.vizmm'}",
        "file:/dev/zero",
        "file:../private/passwd",
        "file:week2/../../private/passwd",
        f"file:{outside / 'no-such-file'}",  # one that does not exist
    ]
    answers = []
    for key in keys:
        with pytest.raises(ValueError) as e:
            cat.get(key)
        text = str(e.value)
        assert "\n" not in text and "SECRET" not in text and "root:x" not in text
        assert text.startswith("unknown trace 'file:")
        answers.append(text.split("': ", 1)[1])  # what follows the key it echoes
    # one answer whatever is on the disk: nothing says which paths exist or what they are
    assert len(set(answers)) == 1, answers
    assert "this server opens only the trace files it was started with" in answers[0]


def test_a_symlink_to_a_device_in_the_given_folder_is_refused_before_reading(disk):
    given, _ = disk
    cat = Catalogue(given=[str(given)])
    with pytest.raises(vizmm.TraceError) as e:
        cat.get("file:zero.vizmm")
    assert "zero.vizmm" in str(e.value) and str(given) not in str(e.value)


def test_given_file_that_vanished_is_named_not_pathed(disk, tmp_path):
    given, _ = disk
    lone = tmp_path / "lone.vizmm"
    shutil.copy(SHIPPED, lone)
    cat = Catalogue(given=[str(lone)])
    assert list(cat.given()) == ["lone.vizmm"]
    lone.unlink()
    with pytest.raises(vizmm.TraceError) as e:
        cat.get("file:lone.vizmm")
    assert "lone.vizmm" in str(e.value) and str(tmp_path) not in str(e.value)


def test_keys_are_checked_before_any_lookup():
    for key in ["file:", "file:a\x00b", "file:" + "x" * 300]:
        with pytest.raises(ValueError, match="unknown trace"):
            parse_key(key)


def test_a_served_trace_is_bounded_by_the_server_budget(disk):
    """A given file whose arrays exceed the page budget is refused before decoding."""
    given, _ = disk
    cat = Catalogue(given=[str(given)], max_trace_bytes=1000)  # Fig. 5.8 holds ~3 KB
    with pytest.raises(vizmm.TraceError, match="over the limit") as e:
        cat.get("file:fig58.vizmm")
    assert "vizmm serve --max-trace-mib" in str(e.value)  # who can raise it, and how


def test_the_command_line_says_how_to_raise_its_limit(monkeypatch, capsys):
    from vizmm.cli import main
    from vizmm.trace import fileformat

    monkeypatch.setattr(fileformat, "DEFAULT_MAX_BYTES", 1000)
    assert main(["table", SHIPPED]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "over the limit of 1000 B" in err[0]
    # the hint names the size it needs: Fig. 5.8's arrays, from its manifest
    need = vizmm.trace.read_info(SHIPPED, max_bytes=2**30).nbytes
    assert err[0].endswith(f"set VIZMM_MAX_TRACE_BYTES={need} (bytes)")


def test_serve_hands_its_given_traces_to_the_server(disk, capsys):
    from vizmm.cli import main

    given, outside = disk
    assert main(["serve", "--dry-run", "--traces", str(given), "--max-trace-mib", "64"]) == 0
    out = capsys.readouterr().out
    assert f"VIZMM_SERVE_TRACES={given}" in out
    assert f"VIZMM_SERVER_MAX_TRACE_BYTES={64 * 2**20}" in out
    assert main(["serve", "--dry-run", "--traces", str(outside / "missing")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert main(["serve", "--dry-run", "--traces", str(outside / "fifo.vizmm")]) == 2
    assert "not a regular file or a folder" in capsys.readouterr().err


# ------------------------------------------------------------ in the browser
def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        kb = int(re.search(r"VmRSS:\s+(\d+)", f.read())[1])
    return kb / 1024


@pytest.mark.browser
@pytest.mark.slow
def test_served_page_opens_only_what_the_server_was_given(new_page, disk, tmp_path):
    given, outside = disk
    assert stat.S_ISFIFO(os.stat(outside / "fifo.vizmm").st_mode)
    hostile = [
        f"file:{outside / 'passwd'}",
        f"file:{outside / 'other.vizmm'}",
        f"file:{outside / 'fifo.vizmm'}",
        "file:/dev/zero",
        "file:zero.vizmm",  # given by name, but a symlink to /dev/zero
    ]
    logs = tmp_path / "logs"
    logs.mkdir()
    with vizmm_serve(str(logs), "--traces", str(given)) as (proc, base):
        pg = new_page(viewport={"width": 1280, "height": 720})

        def open_page(key):
            pg.goto(f"{base}/dashboard?trace={key}")
            pg.wait_for_selector("#vizmm-status", state="attached", timeout=120_000)
            for _ in range(600):  # shown, or refused by the loading thread
                st = read_status(pg, "#vizmm-status")
                if st["ready"] or st.get("message"):
                    break
                pg.wait_for_timeout(100)
            return st, pg.inner_text("body")

        # a given file opens by name
        st, _ = open_page("file:week2/fig511.vizmm")
        assert st["source"] == "file:week2/fig511.vizmm"
        options = pg.eval_on_selector_all("option", "els => els.map(e => e.textContent)")
        assert "File: week2/fig511.vizmm" in options
        assert not any(str(given) in o for o in options)
        before = _rss_mb(proc.pid)
        for key in hostile:
            st, body = open_page(key)
            assert not st["ready"], key  # nothing was opened
            assert "SECRET" not in body and "root:x" not in body, key
            if key == "file:zero.vizmm":  # given by name: refused before any read
                assert "zero.vizmm is a character device, not a trace file" in st["message"]
                assert str(given) not in st["message"]
            else:  # the same sentence for every other key, whatever is on the disk
                assert st["message"].endswith(
                    "this server opens only the trace files it was started with (vizmm "
                    "serve --traces ...); load your own with 'Load a trace file'"
                ), key
        # a 5,000-digit step: Panel converts digits before any page code runs
        pg.goto(f"{base}/dashboard?trace=fig5-8&step=" + "9" * 5000)
        pg.wait_for_selector("#vizmm-status[data-ready='true']", timeout=120_000)
        st = read_status(pg, "#vizmm-status")
        # the page is not blank: it shows the last step and says why, briefly
        assert st["ready"] and st["step"] == 17, st
        assert "is past the last step of this replay (18)" in st["message"]
        assert len(st["message"]) < 200
        after = _rss_mb(proc.pid)
        pg.screenshot(path=str(tmp_path / "refused.png"))
    assert after - before < 50, (before, after)
