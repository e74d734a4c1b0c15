"""Export from the page (issue 32, item 2): the download callback always hands
the browser a file, and an HTML export works again and again in one server
process, beside pages that show the same steps."""

import io
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

pytest.importorskip("panel")

import vizmm.export  # noqa: E402
from vizmm_apps import dashboard as D  # noqa: E402


def test_a_failed_export_still_gives_a_file_and_says_why(monkeypatch):
    d = D.Dashboard(served=False)

    def broken(*args, **kwargs):
        raise RuntimeError("the encoder went away")

    monkeypatch.setattr(vizmm.export, "export_bytes", broken)
    out = d._export()
    assert isinstance(out, io.BytesIO)  # never None: Panel could not send it
    assert b"export failed: the encoder went away" in out.getvalue()
    assert "Export failed: the encoder went away" in d.state.message


def test_html_exports_one_after_another_beside_live_pages():
    # pages of one process showing the same steps (their scenes share the steps'
    # columns), each exporting HTML twice: every export is a whole page
    pages = [D.Dashboard(served=False) for _ in range(2)]
    for d in pages:
        d.state.go(5)
        d.export_format.value = "html"
    for _ in range(2):
        for d in pages:
            data = d._export().getvalue()
            assert data.lstrip().lower().startswith(b"<!doctype html")
            assert b"vizmm-frames" in data
    assert all(not d.state.message.startswith("Export failed") for d in pages)
