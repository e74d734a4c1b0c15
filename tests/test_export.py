"""GIF / MP4 / HTML export and the Pillow frames they are made of.

The oracle for the browser test is typed from the book (PMPP 4th ed., Fig. 5.8):
block (0,0) of a 4 x 4 product with TILE_WIDTH 2 loads M_{0,0}, M_{0,1},
M_{1,0}, M_{1,1} into Mds in phase 0 and M_{0,2}, M_{0,3}, M_{1,2}, M_{1,3} in
phase 1.
"""

import io
import json
import os
import re

import numpy as np
import pytest
from PIL import Image

from vizmm import Access
from vizmm import export as ex
from vizmm.cli import main
from vizmm.render import palette as pal
from vizmm.render.pillow import FrameRenderer, check_size, check_views
from vizmm.replay import CellState, Replay, SlotState, Sub, ThreadState

FIG58_MDS = {
    0: ["M_{0,0}", "M_{0,1}", "M_{1,0}", "M_{1,1}"],
    1: ["M_{0,2}", "M_{0,3}", "M_{1,2}", "M_{1,3}"],
}
FIG58_NDS = {
    0: ["N_{0,0}", "N_{0,1}", "N_{1,0}", "N_{1,1}"],
    1: ["N_{2,0}", "N_{2,1}", "N_{3,0}", "N_{3,1}"],
}


@pytest.fixture(scope="module")
def fig58(record_sim):
    return record_sim(width=4, tile_width=2, kernel="boundary")


@pytest.fixture(scope="module")
def five(record_sim):
    return record_sim(width=5, tile_width=2, kernel="boundary")


def renders(trace, size=(640, 360), **kw):
    replay = Replay(trace, kw.pop("block", (0, 0)), kw.pop("granularity", "substep"))
    r = FrameRenderer(trace, size=size, **kw)
    return replay, (lambda i: r.render(replay.frame(i))), r


def rgb(color):
    return pal.hex_to_rgb(color)


def pixel_in_cell(img, panel, r, c):
    """A pixel near the top-left corner of a cell (clear of its text and outlines)."""
    x0, y0, _, _ = panel.cell_box(r, c)
    off = max(3, panel.cell // 5)
    return img.getpixel((x0 + off, y0 + off))


# ------------------------------------------------------------ pillow frames
def test_frame_is_deterministic_and_sized(fig58):
    replay, render, _ = renders(fig58, size=(800, 450))
    a, b = render(5), render(5)
    assert a.size == (800, 450) and a.mode == "RGB"
    assert a.tobytes() == b.tobytes()
    assert render(4).tobytes() != a.tobytes()


def test_loading_cells_take_the_loading_threads_colour(fig58):
    replay, render, r = renders(fig58, size=(1280, 720))
    i = replay.index_of(1, Sub.LOAD_M)  # phase 1: M_{0,2} M_{0,3} M_{1,2} M_{1,3}
    img = render(i)
    colors = pal.thread_colors(4)
    for t, (row, col) in enumerate([(0, 2), (0, 3), (1, 2), (1, 3)]):
        assert pixel_in_cell(img, r.panels["M"], row, col) == rgb(colors[t])
        ty, tx = divmod(t, 2)  # Mds[ty][tx] is written by thread t, in its colour
        assert pixel_in_cell(img, r.panels["Mds"], ty, tx) == rgb(colors[t])
    # M's phase-0 elements were loaded earlier; Nds still holds phase 0's (stale) tile
    assert pixel_in_cell(img, r.panels["M"], 0, 0) == rgb(pal.CELL_COLORS[CellState.DONE])
    assert pixel_in_cell(img, r.panels["Nds"], 0, 0) == rgb(pal.SLOT_COLORS[SlotState.STALE])


def test_thread_states_and_reads(fig58):
    replay, render, r = renders(fig58, size=(1280, 720))
    i = replay.index_of(0, Sub.K, k=1)
    img = render(i)
    p = r.panels["threads"]
    x0, y0, x1, y1 = p.cell_box(1, 0)
    assert img.getpixel(((x0 + x1) // 2, y1 - 3)) == rgb(
        pal.THREAD_STATE_COLORS[ThreadState.COMPUTING]
    )
    # column k=1 of M's tile is read: M_{0,1}, M_{1,1}; row 1 of N's tile: N_{1,0}, N_{1,1}
    for row, col in [(0, 1), (1, 1)]:
        assert pixel_in_cell(img, r.panels["M"], row, col) == rgb(pal.READ)
    for row, col in [(1, 0), (1, 1)]:
        assert pixel_in_cell(img, r.panels["N"], row, col) == rgb(pal.READ)


def test_zero_fill_is_distinct_and_ghosts_are_drawn(five):
    # block (2,2) of 5x5, TILE_WIDTH 2: its tiles overhang M, N and P
    replay, render, r = renders(five, size=(1280, 720), block=(2, 2))
    i = replay.index_of(0, Sub.LOAD_N)
    img = render(i)
    zero = rgb(pal.SLOT_COLORS[SlotState.ZERO])
    # Mds: thread (0,0) loaded M_{4,0}; the rows below row 4 are zero-filled
    assert pixel_in_cell(img, r.panels["Mds"], 1, 0) == zero
    assert pixel_in_cell(img, r.panels["Mds"], 0, 0) != zero
    # ghost cell M(5, 0) lies outside M (rows 0..4) and is drawn zero-filled
    assert pixel_in_cell(img, r.panels["M"], 5, 0) == rgb(pal.GHOST_COLORS[Access.ZERO_FILL])
    # outside the block's tiles, the padding stays blank
    assert pixel_in_cell(img, r.panels["M"], 5, 3) == rgb(pal.BACKGROUND)


@pytest.mark.parametrize("size", [(640, 360), (1280, 720), (1920, 1080), (720, 1280)])
@pytest.mark.parametrize("width,T", [(4, 2), (5, 2), (12, 4)])
def test_layout_panels_fit_and_do_not_overlap(record_sim, size, width, T):
    trace = record_sim(width=width, tile_width=T, kernel="boundary")
    r = FrameRenderer(trace, size=size)
    W, H = size
    boxes = []
    for p in r.panels.values():
        hh = r._head_h()
        box = (
            p.x,
            p.y - (0 if p.head_below else hh),
            p.x + p.w,
            p.y + p.h + (hh if p.head_below else 0),
        )
        assert 0 <= box[0] and box[2] <= W and 0 <= box[1] and box[3] <= r.legend_y, (p, box)
        boxes.append((p.name, box))
    for i, (na, a) in enumerate(boxes):
        for nb, b in boxes[i + 1 :]:
            overlap = a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
            assert not overlap, (na, a, nb, b)


def test_text_is_legible_at_1080p(fig58):
    r = FrameRenderer(fig58, size=(1920, 1080))
    assert r.fs_title >= 28 and r.fs_body >= 22 and r.fs_small >= 18
    r = FrameRenderer(fig58, size=(1280, 720))
    assert r.fs_small >= 13


def test_check_size_and_views():
    assert check_size((1920, 1080)) == (1920, 1080)
    for bad in [(10, 10), (1920,), "1920x1080", (1920.5, 1080), (True, 500), (99999, 1000)]:
        with pytest.raises(ValueError):
            check_size(bad)
    assert check_views("Nds, M") == ("M", "Nds")
    assert check_views(None)[0] == "caption"
    with pytest.raises(ValueError, match="unknown view"):
        check_views(["M", "Q"])
    with pytest.raises(ValueError, match="at least one"):
        check_views(["legend", "caption"])


# -------------------------------------------------------------------- gif
def decode_gif(data):
    with Image.open(io.BytesIO(data)) as im:
        frames = []
        for i in range(im.n_frames):
            im.seek(i)
            frames.append(im.convert("RGB"))
        return dict(im.info), frames


@pytest.mark.parametrize("granularity", ["substep", "phase"])
def test_gif_has_one_frame_per_step_and_exact_pixels(fig58, granularity):
    data = ex.export_bytes(
        fig58, "gif", granularity=granularity, size=(640, 360), fps=4, progress=False
    )
    info, frames = decode_gif(data)
    replay, render, _ = renders(fig58, size=(640, 360), granularity=granularity)
    n = len(replay)
    assert len(frames) == n == (18 if granularity == "substep" else 4)
    assert info["loop"] == 0 and info["duration"] == 250
    quantize = ex.GifQuantizer(ex.gif_palette(render(i) for i in ex.gif_sample_steps(n)))
    for i in sorted({0, 1, n // 2, n - 1}):
        want = quantize(render(i)).convert("RGB")
        assert want.tobytes() == ex.gif_frame(render(i), quantize.palette).convert("RGB").tobytes()
        assert np.array_equal(np.asarray(frames[i]), np.asarray(want)), f"frame {i}"
        # and faithful: flat colours are exact, only anti-aliased text edges move, a little
        diff = np.abs(np.asarray(frames[i], int) - np.asarray(render(i), int)).max(axis=2)
        assert (diff == 0).mean() > 0.95 and diff.max() <= 64, ((diff == 0).mean(), diff.max())


def test_gif_palette_is_exact_for_few_colours():
    a = Image.new("RGB", (40, 30), (255, 255, 255))
    a.paste((10, 200, 30), (0, 0, 20, 30))
    b = Image.new("RGB", (40, 30), (9, 9, 9))
    palette = ex.gif_palette([a, b])
    for img in (a, b):
        assert ex.gif_frame(img, palette).convert("RGB").tobytes() == img.tobytes()


# -------------------------------------------------------------------- mp4
def decode_mp4(data: bytes, size) -> tuple[str, list]:
    """ffmpeg's (the one imageio-ffmpeg ships) description of a video, and its RGB frames."""
    import subprocess

    import imageio_ffmpeg

    w, h = size
    run = subprocess.run(
        [
            imageio_ffmpeg.get_ffmpeg_exe(),
            "-hide_banner",
            "-i",
            "pipe:0",
            "-f",
            "rawvideo",
            "-pix_fmt",
            "rgb24",
            "pipe:1",
        ],
        input=data,
        capture_output=True,
        check=True,
    )
    raw = np.frombuffer(run.stdout, np.uint8)
    assert raw.size % (w * h * 3) == 0
    return run.stderr.decode(), list(raw.reshape(-1, h, w, 3).astype(int))


def test_mp4_frames_match_the_pillow_frames(fig58):
    size = (640, 360)
    data = ex.export_bytes(fig58, "mp4", size=size, fps=2, progress=False)
    assert data[4:8] == b"ftyp"
    info, frames = decode_mp4(data, size)
    assert re.search(r"Video: h264 .*yuv420p.*640x360.* 2 fps", info), info
    replay, render, _ = renders(fig58, size=size)
    assert len(frames) == len(replay)
    for i in [0, 1, 5, len(replay) - 1]:
        err = np.abs(frames[i] - np.asarray(render(i), int)).mean()
        assert err < 2.5, (i, err)  # codec error only
        for j in (i - 1, i + 1):  # ... and it is this frame, not a neighbour
            if 0 <= j < len(replay):
                assert err < np.abs(frames[i] - np.asarray(render(j), int)).mean()


# -------------------------------------------------------------- atomicity
def test_failed_gif_export_leaves_no_file(fig58, tmp_path, monkeypatch):
    calls = {"n": 0}
    real = ex.GifQuantizer.__call__

    def flaky(self, img):
        calls["n"] += 1
        if calls["n"] == 5:
            raise RuntimeError("encoder broke midway")
        return real(self, img)

    monkeypatch.setattr(ex.GifQuantizer, "__call__", flaky)
    out = tmp_path / "fig58.gif"
    with pytest.raises(RuntimeError, match="midway"):
        ex.export(fig58, out, size=(640, 360), progress=False)
    assert calls["n"] == 5 and os.listdir(tmp_path) == []


def test_failed_mp4_export_leaves_no_file_and_keeps_the_old_one(fig58, tmp_path, monkeypatch):
    import imageio.v2 as iio

    out = tmp_path / "fig58.mp4"
    out.write_bytes(b"previous export")
    real = iio.get_writer

    def get_writer(*args, **kwargs):
        writer = real(*args, **kwargs)
        append = writer.append_data
        count = {"n": 0}

        def broken(frame):
            count["n"] += 1
            if count["n"] == 3:
                raise OSError("ffmpeg died")
            append(frame)

        writer.append_data = broken
        return writer

    monkeypatch.setattr(iio, "get_writer", get_writer)
    with pytest.raises(OSError, match="ffmpeg died"):
        ex.export(fig58, out, size=(640, 360), progress=False)
    assert os.listdir(tmp_path) == ["fig58.mp4"]
    assert out.read_bytes() == b"previous export"


def test_bad_arguments_write_nothing(fig58, tmp_path):
    out = tmp_path / "x.gif"
    cases = [
        (dict(fmt="avi"), "unknown export format"),
        (dict(size=(0, 720)), "size"),
        (dict(size="big"), "size"),
        (dict(fps=0), "fps"),
        (dict(fps=-1), "fps"),
        (dict(fps=float("nan")), "fps"),
        (dict(block=(7, 0)), "outside the 2 x 2 grid"),
        (dict(block="00"), "block"),
        (dict(granularity="warp"), "granularity"),
        (dict(order="random"), "order"),
        (dict(views=["M", "nope"]), "unknown view"),
        (dict(views=["M", "table"]), "only in the HTML"),
        (dict(focus=(2, 0)), "outside"),
    ]
    for kwargs, msg in cases:
        with pytest.raises(ex.ExportError, match=msg):
            ex.export(fig58, out, **kwargs)
    with pytest.raises(ex.ExportError, match="even width"):
        ex.export(fig58, tmp_path / "x.mp4", size=(641, 360))
    with pytest.raises(ex.ExportError, match="cannot tell the format"):
        ex.export(fig58, tmp_path / "x.avi")
    with pytest.raises(FileNotFoundError):
        ex.export(fig58, tmp_path / "missing" / "x.gif")
    assert os.listdir(tmp_path) == []
    assert issubclass(ex.ExportError, ValueError)


def test_block_not_recorded(record_sim):
    trace = record_sim(width=6, tile_width=2, kernel="boundary", window=[(0, 0)])
    assert not trace.has_block((1, 1))
    with pytest.raises(ex.ExportError, match=r"not recorded per thread; detailed blocks: \(0,0\)"):
        ex.export_bytes(trace, "gif", block=(1, 1))


def test_naive_kernel_has_nothing_to_export(record_sim):
    trace = record_sim(width=4, tile_width=2, kernel="naive")
    with pytest.raises(ex.ExportError, match="naive kernel"):
        ex.export_bytes(trace, "html")


def test_progress_callback(fig58):
    seen = []
    ex.export_bytes(
        fig58,
        "gif",
        granularity="phase",
        size=(320, 180),
        progress=lambda done, total: seen.append((done, total)),
    )
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]


def test_format_from_path():
    assert ex.format_from_path("a/b.GIF") == "gif"
    assert ex.format_from_path("x.htm") == "html"
    assert ex.format_from_path("x.mp4") == "mp4"
    with pytest.raises(ex.ExportError):
        ex.format_from_path("x")


# ------------------------------------------------------------------- html
def test_html_frame_data_golden():
    frames = [
        {"A": {"x": [1.0, 2.0], "t": ["a", "b"]}, "B": {"v": [float("nan")]}},
        {"A": {"x": [1.0, 2.0], "t": ["a", "c"]}, "B": {"v": [np.float32(0.5)]}},
        {"A": {"x": [1.0, 2.0], "t": ["a", "b"]}, "B": {"v": [float("nan")]}},
    ]
    assert ex.html_frame_data(frames) == {
        "n": 3,
        "pool": [[1.0, 2.0], ["a", "b"], [None], ["a", "c"], [0.5]],
        "frames": [
            {"A": {"x": 0, "t": 1}, "B": {"v": 2}},
            {"A": {"x": 0, "t": 3}, "B": {"v": 4}},
            {"A": {"x": 0, "t": 1}, "B": {"v": 2}},
        ],
    }
    only_b = ex.html_frame_data(frames, names=["B"])
    assert only_b["pool"] == [[None], [0.5]] and only_b["frames"][1] == {"B": {"v": 1}}


def html_pack(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="vizmm-frames">(.*?)</script>', html, re.S)
    return json.loads(m.group(1))


@pytest.fixture(scope="module")
def fig58_html(fig58, tmp_path_factory):
    path = tmp_path_factory.mktemp("html") / "fig58.html"
    ex.export(fig58, path, progress=False)
    return path


def test_html_is_self_contained_and_small(fig58, fig58_html):
    from vizmm.render.bokeh_scene import frame_columns

    html = fig58_html.read_text(encoding="utf-8")
    size = fig58_html.stat().st_size
    assert size < 5 * 2**20, size
    assert not re.search(r"<(script|link)[^>]+(src|href)=", html)  # nothing fetched
    assert "cdn.bokeh.org" not in html
    pack = html_pack(html)
    replay = Replay(fig58)
    assert pack["n"] == len(pack["frames"]) == len(replay) == 18
    # every frame's data is there, whole: frame 7's Mds columns are frame_columns'
    want = frame_columns(replay.frame(7), fig58)["Mds"]
    got = {c: pack["pool"][k] for c, k in pack["frames"][7]["Mds"].items()}
    assert got["element"] == want["element"] == FIG58_MDS[0]


@pytest.fixture(scope="module")
def browser_page(browser):
    pg = browser.new_page(viewport={"width": 1600, "height": 1000})
    yield pg
    pg.close()


@pytest.mark.browser
def test_html_steps_with_the_keyboard_as_the_book_says(fig58, fig58_html, browser_page):
    page = browser_page
    problems = []
    page.on(
        "console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(fig58_html.as_uri())
    page.wait_for_function("document.body.dataset.vizmmReady === '1'", timeout=30_000)

    def shown():
        return page.evaluate("""() => {
            const pack = JSON.parse(document.getElementById('vizmm-frames').textContent);
            const doc = Bokeh.documents[0];
            const data = (name) => doc.get_model_by_id(pack.sources[name]).data;
            const caption = Bokeh.index.find_one_by_id(pack.divs.caption).el;
            return {step: window.vizmm.current, mds: Array.from(data('Mds').element),
                    nds: Array.from(data('Nds').element),
                    slider: doc.get_model_by_id(pack.slider).value,
                    caption: (caption.shadowRoot || caption).textContent};
        }""")

    replay = Replay(fig58)
    load_m0 = replay.index_of(0, Sub.LOAD_M)
    load_n1 = replay.index_of(1, Sub.LOAD_N)
    assert shown()["mds"] == ["?"] * 4  # start: shared memory uninitialised
    page.keyboard.press("End")
    assert shown()["step"] == len(replay) - 1
    page.keyboard.press("Home")  # a jump back, then step forward key by key
    for _ in range(load_m0):
        page.keyboard.press("ArrowRight")
    s = shown()
    assert s["step"] == load_m0 and s["slider"] == load_m0 + 1
    assert s["mds"] == FIG58_MDS[0]
    for _ in range(load_n1 - load_m0):
        page.keyboard.press("ArrowRight")
    s = shown()
    assert s["mds"] == FIG58_MDS[1] and s["nds"] == FIG58_NDS[1]
    page.keyboard.press("ArrowLeft")
    s = shown()
    assert s["step"] == load_n1 - 1 and s["mds"] == FIG58_MDS[1] and s["nds"] == FIG58_NDS[0]
    # jumps in any order (slider, End, Home) always show exactly the frame asked for
    from vizmm.render.bokeh_scene import frame_columns

    for i in [17, 2, 9, 0, 13, 1, 16, 8]:
        page.evaluate(f"() => window.vizmm.show({i})")
        want = frame_columns(replay.frame(i), fig58)
        s = shown()
        assert s["step"] == i and s["mds"] == want["Mds"]["element"], i
        assert s["nds"] == want["Nds"]["element"], i
        assert f"Step {i + 1} of {len(replay)}" in s["caption"], i  # the text views follow
    page.keyboard.press(" ")  # play from frame 8 ... then pause
    page.wait_for_function("window.vizmm.current > 8", timeout=5_000)
    page.keyboard.press(" ")
    assert problems == []


# -------------------------------------------------------------------- cli
def test_cli_export_says_where_and_how_big(fig58, tmp_path, capsys):
    trace_file = tmp_path / "fig58.vizmm"
    fig58.save(trace_file)
    out = tmp_path / "fig58.gif"
    code = main(
        [
            "export",
            str(trace_file),
            "--format",
            "gif",
            "--block",
            "0,1",
            "--granularity",
            "phase",
            "--size",
            "640x360",
            "--fps",
            "1",
            "-q",
            "-o",
            str(out),
        ]
    )
    assert code == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"wrote {out} (") and "KiB" in line and "4 frames" in line
    assert "block (0,1)" in line
    with Image.open(out) as im:
        assert im.n_frames == 4
    # format from the suffix, html
    out = tmp_path / "p.html"
    assert main(["export", str(trace_file), "--granularity", "phase", "-q", "-o", str(out)]) == 0
    assert "html" in capsys.readouterr().out and out.exists()


def test_cli_export_errors_are_one_line(fig58, tmp_path, capsys):
    trace_file = tmp_path / "fig58.vizmm"
    fig58.save(trace_file)
    for args, msg in [
        (["--size", "641x360", "-o", str(tmp_path / "x.mp4")], "even width"),
        (["--block", "9,9", "-o", str(tmp_path / "x.gif")], "outside"),
        (["-o", str(tmp_path / "x.avi")], "cannot tell the format"),
        (["--format", "gif", "-o", str(tmp_path / "x.mp4")], "does not match"),
        (["--fps", "0", "-o", str(tmp_path / "x.gif")], "--fps"),
        (["--views", "M,table", "-o", str(tmp_path / "x.gif")], "only in the HTML"),
        ([], "give -o FILE"),
    ]:
        assert main(["export", str(trace_file), *args]) == 2, args
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and msg in err, (args, err)
    assert sorted(os.listdir(tmp_path)) == ["fig58.vizmm"]
    assert main(["export", str(tmp_path / "nope.vizmm"), "-o", str(tmp_path / "x.gif")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_export_is_in_the_cli_help(capsys):
    assert main(["--help"]) == 0
    assert "export" in capsys.readouterr().out
