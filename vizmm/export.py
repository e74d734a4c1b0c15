"""Export a replayed block as an animated GIF, an MP4 video or one offline HTML file.

One intermediate form, several exporters (as rich exports its segments as
text, HTML and SVG): a :class:`~vizmm.replay.Replay` gives one neutral
:class:`~vizmm.replay.Frame` per step, and

* ``gif``, ``mp4``: :class:`~vizmm.render.pillow.FrameRenderer` draws each
  frame as an image; Pillow writes the GIF, imageio with the ffmpeg that
  ``imageio-ffmpeg`` ships writes an H.264 MP4 (``yuv420p``, plays in
  browsers and slide software);
* ``html``: the dashboard's :class:`~vizmm.render.bokeh_scene.Scene` with
  BokehJS inline (no CDN: the file works offline), the data of every frame
  embedded (:func:`~vizmm.render.bokeh_scene.frame_columns`, each distinct
  column stored once) and play / step / scrub controls with the keyboard
  shortcuts ← → (step), space (play / pause), Home and End.

:func:`export_bytes` returns the file's bytes and writes nothing;
:func:`export` writes them through a temporary file and a rename, so a failed
export leaves no file behind. ``vizmm export`` (in :mod:`vizmm.cli`)
is the command-line face of both.

Examples
--------
>>> import vizmm
>>> from vizmm.export import export
>>> trace = vizmm.record(width=4, tile_width=2)             # doctest: +SKIP
>>> export(trace, "fig58.gif", block=(0, 0))                # doctest: +SKIP
'fig58.gif'
"""

from __future__ import annotations

import io
import json
import math
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .render import views as view_specs
from .replay import GRANULARITIES, NAIVE_REFUSAL, ORDERS, Replay
from .replay.findings import FindingMarks, finding_marks, with_finding
from .trace import Trace, atomic_write, not_recorded_message
from .trace.destination import STREAMS, check_writable, scratch_folder

__all__ = [
    "EXPORT_FORMATS",
    "HTML_ONLY_VIEWS",
    "MAX_FPS",
    "ExportError",
    "export",
    "export_bytes",
    "gif_frame",
    "GifQuantizer",
    "gif_palette",
    "gif_sample_steps",
    "html_frame_data",
    "format_from_path",
]

#: File formats :func:`export` writes.
EXPORT_FORMATS = ("gif", "mp4", "html")
#: Views only the HTML export (the dashboard's scene) can show: those the Pillow
#: renderer does not draw (:mod:`vizmm.render.views`).
HTML_ONLY_VIEWS = view_specs.names(pillow=False)
#: Highest frame rate accepted (GIF frame delays are counted in 1/100 s).
MAX_FPS = 50.0
#: Show a progress bar (on a terminal) when an export has more frames than this.
PROGRESS_AFTER_FRAMES = 10
#: ffmpeg's x264 constant-rate factor: 18 is visually lossless for flat diagrams.
MP4_CRF = 18

ProgressArg = bool | Callable[[int, int], object] | None


class ExportError(ValueError):
    """An export was asked with arguments it cannot take; the message says which."""


# ------------------------------------------------------------------ checks
def format_from_path(path: str | os.PathLike) -> str:
    """The export format named by a file's suffix (``.gif``, ``.mp4``, ``.html``/``.htm``).

    Parameters
    ----------
    path : str or os.PathLike
        The file to write.

    Raises
    ------
    ExportError
        When the suffix names no format of :data:`EXPORT_FORMATS`.
    """
    suffix = os.path.splitext(os.fspath(path))[1].lower().lstrip(".")
    if suffix == "htm":
        suffix = "html"
    if suffix not in EXPORT_FORMATS:
        raise ExportError(
            f"cannot tell the format from {os.fspath(path)!r}: give a file ending in "
            f"{', '.join('.' + f for f in EXPORT_FORMATS)} or name the format "
            f"({', '.join(EXPORT_FORMATS)})"
        )
    return suffix


def _check_format(fmt) -> str:
    if not isinstance(fmt, str) or fmt.lower().lstrip(".") not in EXPORT_FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; choose from {', '.join(EXPORT_FORMATS)}")
    return fmt.lower().lstrip(".")


def _check_fps(fps) -> float:
    if isinstance(fps, bool) or not isinstance(fps, (int, float, np.integer, np.floating)):
        raise ExportError(f"fps must be a number of frames per second, got {fps!r}")
    fps = float(fps)
    if not math.isfinite(fps) or fps <= 0 or fps > MAX_FPS:
        raise ExportError(f"fps must be > 0 and <= {MAX_FPS:g} frames per second, got {fps:g}")
    return fps


def _check_block(trace: Trace, block) -> tuple[int, int]:
    try:
        if isinstance(block, (str, bytes)) or any(isinstance(v, (bool, float)) for v in block):
            raise TypeError
        by, bx = (int(v) for v in block)
    except (TypeError, ValueError):
        raise ExportError(f"block must be (by, bx), two integers, got {block!r}") from None
    problem = not_recorded_message(trace, (by, bx))
    if problem:
        raise ExportError(problem)
    return by, bx


def _check_views(views, fmt: str, trace: Trace | None = None):
    """Views for the format, as a tuple.

    None means the format's default: every view it can draw that the trace's
    size affords (:func:`vizmm.render.affordable_views`: no element-by-element
    M, N, P for large matrices, as in the dashboard).
    """
    from . import render

    # the views' names, from their specs (no Bokeh nor Pillow imported for them)
    available = view_specs.names() if fmt == "html" else view_specs.names(pillow=True)
    if views is None:
        return available if trace is None else render.affordable_views(trace, available)
    views = tuple(render.view_names(views))
    if not views:
        raise ExportError("choose at least one view")
    if fmt != "html":
        html_only = [v for v in views if v in HTML_ONLY_VIEWS]
        if html_only:
            raise ExportError(
                f"view(s) {', '.join(map(repr, html_only))} are shown only in the "
                f"HTML export; {fmt.upper()} frames draw: {', '.join(available)}"
            )
    render.check_known_views(views, available, ExportError)
    if trace is not None:
        too_big = [v for v in views if v not in render.affordable_views(trace, views)]
        if too_big:
            j, k, l = trace.shape
            raise ExportError(
                f"M {j}x{k}, N {k}x{l} are too large to draw the view(s) "
                f"{', '.join(map(repr, too_big))} element by element; choose from "
                f"{', '.join(render.affordable_views(trace, available))}"
            )
    if fmt == "html":
        return views
    from .render.pillow import check_views

    try:
        return check_views(views)
    except ValueError as exc:
        raise ExportError(str(exc)) from None


def _replay(trace, block, granularity, order, focus, transactions=False, warp=0) -> Replay:
    if not isinstance(trace, Trace):
        raise ExportError(f"trace must be a vizmm Trace, got {type(trace).__name__}")
    if granularity not in GRANULARITIES:
        raise ExportError(
            f"granularity must be one of {', '.join(GRANULARITIES)}, got {granularity!r}"
        )
    if order not in ORDERS:
        raise ExportError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    if trace.kernel == "naive":
        raise ExportError(NAIVE_REFUSAL)
    block = _check_block(trace, block)
    try:
        return Replay(
            trace,
            block,
            granularity=granularity,
            order=order,
            focus=focus,
            transactions=transactions,
            warp=warp,
        )
    except (ValueError, TypeError) as exc:
        raise ExportError(str(exc)) from None


# ---------------------------------------------------------------- progress
class _Progress:
    """A tqdm bar, a caller's callback ``(done, total)``, or nothing."""

    def __init__(self, progress: ProgressArg, total: int, desc: str):
        self.total = total
        self.callback = progress if callable(progress) else None
        self.bar = None
        if self.callback is None and progress is not False:
            from tqdm.auto import tqdm

            # None: a bar on a terminal for long exports; True: always
            disable = None if progress is None else False
            if progress is None and total <= PROGRESS_AFTER_FRAMES:
                disable = True
            self.bar = tqdm(
                total=total, desc=desc, unit="frame", disable=disable, leave=False, file=sys.stderr
            )
        self.done = 0

    def step(self):
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)
        if self.callback is not None:
            self.callback(self.done, self.total)

    def close(self):
        if self.bar is not None:
            self.bar.close()


# ------------------------------------------------------------------ frames
def _check_theme(theme) -> str:
    from .render.palette import palette

    try:
        return palette(theme).name
    except ValueError as exc:
        raise ExportError(str(exc)) from None


def _check_size(size, fmt: str) -> tuple[int, int]:
    from .render.pillow import check_size

    try:
        w, h = check_size(size)
    except ValueError as exc:
        raise ExportError(str(exc)) from None
    if fmt == "mp4" and (w % 2 or h % 2):
        raise ExportError(f"an MP4 (H.264, yuv420p) needs an even width and height, got {w}x{h}")
    return w, h


#: Frames sampled (evenly over the replay) to build a GIF's one palette.
GIF_PALETTE_SAMPLES = 12


def gif_palette(images: Iterable):
    """One 256-colour palette for every frame of a GIF, from a sample of its frames.

    The frames carry about a thousand colours (anti-aliased text), more than
    a GIF's 256. The palette keeps the flat colours (fills, lines, the
    background: every colour covering at least 1/20000 of the sample, up to
    160 of them) exactly, and spends the remaining entries on a median cut
    of the other pixels (text edges). One palette for all frames lets the
    GIF store each frame as its difference to the previous one, and keeps a
    colour the same in every frame. Where the sample has at most 256
    colours the palette holds them all exactly.

    Parameters
    ----------
    images : iterable of PIL.Image.Image
        RGB frames, all of one size.

    Returns
    -------
    PIL.Image.Image
        A mode 'P' image whose palette :func:`gif_frame` maps frames to.
    """
    from PIL import Image

    # every other row is plenty to weigh the colours
    pixels = np.concatenate([np.asarray(im.convert("RGB"))[::2].reshape(-1, 3) for im in images])
    keys = _rgb_keys(pixels)
    uniq, counts = np.unique(keys, return_counts=True)
    if len(uniq) <= 256:
        exact = uniq
        rest: list[int] = []
    else:
        by_count = np.argsort(-counts, kind="stable")
        flat = by_count[counts[by_count] >= max(1, len(keys) // 20000)][:160]
        exact = uniq[flat]
        others = pixels[~np.isin(keys, exact)]
        quant = Image.fromarray(others.reshape(1, -1, 3)).quantize(
            colors=256 - len(exact), method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE
        )
        used = sorted({int(i) for i in np.unique(np.asarray(quant))})
        p = quant.getpalette()
        assert p is not None  # quantize() makes a palette image
        rest = [(p[3 * i] << 16) | (p[3 * i + 1] << 8) | p[3 * i + 2] for i in used]
    colors = [int(k) for k in exact] + [k for k in rest if k not in set(exact.tolist())]
    colors = colors[:256]
    flat_rgb = [v for k in colors for v in ((k >> 16) & 255, (k >> 8) & 255, k & 255)]
    palette = Image.new("P", (1, 1))
    palette.putpalette(flat_rgb + flat_rgb[:3] * (256 - len(colors)))
    return palette


def _rgb_keys(arr: np.ndarray) -> np.ndarray:
    """(..., 3) uint8 RGB to int32 keys 0xRRGGBB."""
    arr = arr.astype(np.int32)
    return (arr[..., 0] << 16) | (arr[..., 1] << 8) | arr[..., 2]


class GifQuantizer:
    """Map RGB frames to one palette, each pixel to its nearest palette colour.

    Nearest is Euclidean in RGB, without dithering: flat areas stay flat and
    a colour the palette holds is kept exactly (Pillow's own conversion to a
    given palette only approximates the nearest colour). A table of the
    colours seen so far makes every frame after the first cheap.

    Parameters
    ----------
    palette : PIL.Image.Image
        From :func:`gif_palette`.
    """

    def __init__(self, palette):
        self.palette = palette
        self.flat = palette.getpalette()[:768]
        self.pal = np.array(self.flat, np.int32).reshape(-1, 3)
        self.table = np.full(1 << 24, -1, np.int16)  # 0xRRGGBB -> palette index

    def __call__(self, image):
        """The mode 'P' image of one RGB frame (``image``: PIL.Image.Image)."""
        from PIL import Image

        arr = np.asarray(image.convert("RGB"))
        keys = _rgb_keys(arr)
        idx = self.table[keys]
        if (idx < 0).any():
            new = np.unique(keys[idx < 0])
            colors = np.stack([(new >> 16) & 255, (new >> 8) & 255, new & 255], axis=1)
            d = ((colors[:, None, :] - self.pal[None, :, :]) ** 2).sum(axis=2)
            self.table[new] = d.argmin(axis=1)
            idx = self.table[keys]
        out = Image.fromarray(idx.astype(np.uint8), "P")
        out.putpalette(self.flat)
        return out


def gif_frame(image, palette):
    """The palette image a GIF export stores for one RGB frame (see :class:`GifQuantizer`).

    ``gif_frame(img, pal).convert("RGB")`` is exactly what a GIF decoder
    shows for the frame.

    Parameters
    ----------
    image : PIL.Image.Image
        RGB frame.
    palette : PIL.Image.Image
        From :func:`gif_palette`.

    Returns
    -------
    PIL.Image.Image
        Mode 'P', the size of ``image``.
    """
    return GifQuantizer(palette)(image)


def gif_sample_steps(n: int) -> list[int]:
    """The steps (of ``n``) whose frames make a GIF's palette: evenly spread, at most 12.

    Parameters
    ----------
    n : int
        The replay's number of steps, 1 or more.
    """
    return sorted({int(i) for i in np.linspace(0, n - 1, min(GIF_PALETTE_SAMPLES, n)).round()})


def _gif_bytes(render: Callable[[int], object], n: int, fps: float, progress: _Progress) -> bytes:
    quantize = GifQuantizer(gif_palette(render(i) for i in gif_sample_steps(n)))
    frames = []
    for i in range(n):
        frames.append(quantize(render(i)))
        progress.step()
    buf = io.BytesIO()
    frames[0].save(
        buf,
        format="GIF",
        save_all=True,
        append_images=frames[1:],
        duration=max(20, round(1000 / fps)),
        loop=0,
        optimize=False,
    )
    return buf.getvalue()


def _mp4_bytes(
    frames: Iterable,
    size: tuple[int, int],
    fps: float,
    progress: _Progress,
    workdir: str | os.PathLike | None = None,
) -> bytes:
    """The MP4 of ``frames``, encoded by ffmpeg into a scratch folder in ``workdir``.

    The scratch folder (``.vizmm-<pid>-mp4-*.tmp``, see
    :func:`vizmm.trace.destination.scratch_folder`) is removed however this
    returns: success, an error, KeyboardInterrupt or the CLI's SIGTERM.
    """
    import imageio.v2 as iio

    with scratch_folder(workdir, "mp4") as tmp:
        path = os.path.join(tmp, "export.mp4")
        writer = iio.get_writer(
            path,
            format="FFMPEG",
            mode="I",
            fps=fps,
            codec="libx264",
            pixelformat="yuv420p",
            macro_block_size=2,
            quality=None,
            ffmpeg_log_level="error",
            output_params=["-crf", str(MP4_CRF), "-preset", "medium", "-movflags", "+faststart"],
        )
        try:
            for img in frames:
                writer.append_data(np.asarray(img))
                progress.step()
        finally:
            writer.close()
        with open(path, "rb") as f:
            return f.read()


# -------------------------------------------------------------------- html
def _jsonable_column(values) -> list:
    """A column as JSON-ready list: NaN and infinities become None (JSON has no NaN)."""
    out: list = []
    for v in values:
        if isinstance(v, (float, np.floating)):
            v = float(v)
            out.append(v if math.isfinite(v) else None)
        elif isinstance(v, np.integer):
            out.append(int(v))
        elif isinstance(v, np.ndarray):
            out.append(_jsonable_column(v.tolist()))
        else:
            out.append(v)
    return out


def html_frame_data(
    columns_per_frame: list[dict[str, dict[str, list]]],
    names: Iterable[str] | None = None,
    texts_per_frame: list[dict[str, str]] | None = None,
) -> dict:
    """Pack the sources' data of every frame, each distinct column stored once (pure).

    Parameters
    ----------
    columns_per_frame : list of dict
        :func:`~vizmm.render.bokeh_scene.frame_columns` of every frame, in order.
    names : iterable of str, optional
        Sources to keep (default: all of the first frame's).
    texts_per_frame : list of dict, optional
        The text views' HTML of every frame (``{view: HTML}``,
        :meth:`~vizmm.render.bokeh_scene.Scene.text_html`), in order.

    Returns
    -------
    dict
        ``{"n": frames, "pool": [column, ...], "frames": [{source: {column: pool index}}]}``;
        a column is a JSON-ready list (NaN as None). Frame ``i`` of source
        ``s`` is ``{c: pool[k] for c, k in frames[i][s].items()}``. With
        ``texts_per_frame``, also ``"text_pool": [HTML, ...]`` and ``"texts":
        [{view: text_pool index}]``, each distinct HTML stored once.
    """
    pool: list[list] = []
    index: dict[str, int] = {}
    frames = []
    keep = None if names is None else set(names)
    for cols in columns_per_frame:
        entry = {}
        for name, data in cols.items():
            if keep is not None and name not in keep:
                continue
            refs = {}
            for col, values in data.items():
                lst = _jsonable_column(values)
                key = json.dumps(lst, separators=(",", ":"), allow_nan=False)
                if key not in index:
                    index[key] = len(pool)
                    pool.append(lst)
                refs[col] = index[key]
            entry[name] = refs
        frames.append(entry)
    out: dict[str, Any] = {"n": len(frames), "pool": pool, "frames": frames}
    if texts_per_frame is not None:
        text_pool: list[str] = []
        text_index: dict[str, int] = {}
        texts = []
        for views in texts_per_frame:
            refs = {}
            for view, text in views.items():
                if text not in text_index:
                    text_index[text] = len(text_pool)
                    text_pool.append(text)
                refs[view] = text_index[text]
            texts.append(refs)
        out.update(text_pool=text_pool, texts=texts)
    return out


_ENGINE_JS = r"""
(function () {
  "use strict";
  const PACK = JSON.parse(document.getElementById("vizmm-frames").textContent);
  const N = PACK.n;
  // JSON has no NaN: numeric columns carry null where the frame has NaN
  const POOL = PACK.pool.map(function (col) {
    if (col.some(function (v) { return typeof v === "number"; }))
      return col.map(function (v) { return v === null ? NaN : v; });
    return col;
  });
  let doc = null, current = 0, timer = null, busy = false;
  const model = function (id) { return doc ? doc.get_model_by_id(id) : null; };

  function show(i) {
    if (!doc) return;
    i = Math.max(0, Math.min(N - 1, Math.round(i)));
    const frame = PACK.frames[i];
    for (const name in frame) {
      const src = model(PACK.sources[name]);
      if (!src) continue;
      const data = {};
      const cols = frame[name];
      for (const c in cols) data[c] = POOL[cols[c]].slice();
      src.data = data;  // whole columns: never a patch, so any jump shows the right frame
    }
    const views = PACK.texts ? PACK.texts[i] : {};
    for (const view in views) {  // the text views: their HTML
      const div = model(PACK.divs[view]);
      const text = PACK.text_pool[views[view]];
      if (div && div.text !== text) div.text = text;
    }
    current = i;
    busy = true;
    try {
      const slider = model(PACK.slider);
      if (slider && slider.value !== i + 1) slider.value = i + 1;
      const status = model(PACK.status);
      if (status) status.text = "step " + (i + 1) + " / " + N;
    } finally { busy = false; }
    document.body.dataset.vizmmStep = String(i);
  }
  function pause() {
    if (timer !== null) { clearInterval(timer); timer = null; }
    const b = model(PACK.play); if (b) b.label = "▶ play";
  }
  function play() {
    if (timer !== null) return;
    if (current >= N - 1) show(0);
    timer = setInterval(function () {
      if (current >= N - 1) { pause(); return; }
      show(current + 1);
    }, 1000 / PACK.fps);
    const b = model(PACK.play); if (b) b.label = "❚❚ pause";
  }
  function toggle() { if (timer === null) play(); else pause(); }
  function step(d) { pause(); show(current + d); }

  window.vizmm = {
    show: function (i) { pause(); show(i); }, step: step, play: play, pause: pause,
    toggle: toggle, get current() { return current; }, n: N,
    fromSlider: function (v) { if (!busy && v - 1 !== current) { pause(); show(v - 1); } },
    get ready() { return doc !== null; },
  };

  document.addEventListener("keydown", function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const t = e.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA")) return;
    let used = true;
    if (e.key === "ArrowRight") step(1);
    else if (e.key === "ArrowLeft") step(-1);
    else if (e.key === " " || e.key === "Spacebar") toggle();
    else if (e.key === "Home") step(-N);
    else if (e.key === "End") step(N);
    else used = false;
    if (used) e.preventDefault();
  });

  (function wait() {  // the document is built once BokehJS has embedded it
    const docs = window.Bokeh && window.Bokeh.documents;
    if (docs && docs.length && docs[0].get_model_by_id(PACK.slider)) {
      doc = docs[0];
      show(PACK.start || 0);
      document.body.dataset.vizmmReady = "1";
    } else setTimeout(wait, 20);
  })();
})();
"""

_HTML_TEMPLATE = """{% extends base %}
{% block postamble %}
<style>
  body { font-family: 'DejaVu Sans', 'Helvetica Neue', Arial, sans-serif; margin: 12px;
         background: {{ background }}; color: {{ text }}; }
  .vizmm-help { color: {{ muted }}; font-size: 13px; margin: 4px 0 8px 0; }
</style>
{% endblock %}
{% block inner_body %}
<div class="vizmm-help">{{ help_text }}</div>
{{ super() }}
<script type="application/json" id="vizmm-frames">{{ frames_json | safe }}</script>
<script>{{ engine_js | safe }}</script>
{% endblock %}
"""


def _self_contained_resources():
    """BokehJS inline, and no file to fetch.

    Bokeh adds to every page the external scripts that any imported library's
    models declare (Panel's ES-module shim, a path on a Panel server, once
    Panel is imported, as it is in the dashboard). An offline file has no
    use for them: drop the external files, keep the inline code.
    """
    from bokeh.resources import Resources

    class SelfContained(Resources):
        @property
        def js_files(self) -> list[str]:
            return []

        @property
        def css_files(self) -> list[str]:
            return []

        def clone(self, *, components=None) -> SelfContained:
            # Bokeh clones the resources to pick components; keep the class.
            return SelfContained(
                mode="inline",
                components=(components if components is not None else list(self.components)),
            )

    return SelfContained(mode="inline")


def _html_bytes(
    trace: Trace,
    replay: Replay,
    views,
    fps: float,
    progress: _Progress,
    theme: str = "light",
    start: int = 0,
    marks: FindingMarks | None = None,
) -> bytes:
    from bokeh.document import Document
    from bokeh.embed import file_html
    from bokeh.layouts import column, row
    from bokeh.models import CustomJS
    from bokeh.models.widgets import Button, Div, Slider
    from jinja2 import Template

    from .render.bokeh_scene import Scene, frame_columns

    n = len(replay)
    scene = Scene(trace, views=views, theme=theme)
    per_frame = []
    texts_per_frame = []
    for i in range(n):
        frame = with_finding(replay.frame(i), marks)
        # the page steps through these columns without Scene.update: draw what they need
        scene.draw_parts(
            *(["finding"] if frame.finding is not None else []),
            *(["transactions"] if frame.transactions is not None else []),
        )
        per_frame.append(frame_columns(frame, trace, theme=scene.palette))
        texts_per_frame.append(scene.text_html(per_frame[-1]))
        progress.step()
    scene.update(with_finding(replay.frame(start), marks))
    pack = html_frame_data(per_frame, names=scene.sources.keys(), texts_per_frame=texts_per_frame)

    button: dict[str, Any] = dict(width=90, height=32, margin=(0, 4, 0, 0))
    first = Button(label="|◀ first", **button)
    prev = Button(label="◀ step", **button)
    play = Button(label="▶ play", button_type="primary", **button)
    nxt = Button(label="step ▶", **button)
    last = Button(label="last ▶|", **button)
    slider = Slider(
        start=1,
        end=max(n, 2),
        value=start + 1,
        step=1,
        title="step",
        width=420,
        margin=(0, 12, 0, 8),
    )
    status = Div(text=f"step {start + 1} / {n}", width=120, margin=(8, 0, 0, 8))
    first.js_on_click(CustomJS(code="window.vizmm && window.vizmm.step(-window.vizmm.n)"))
    prev.js_on_click(CustomJS(code="window.vizmm && window.vizmm.step(-1)"))
    play.js_on_click(CustomJS(code="window.vizmm && window.vizmm.toggle()"))
    nxt.js_on_click(CustomJS(code="window.vizmm && window.vizmm.step(1)"))
    last.js_on_click(CustomJS(code="window.vizmm && window.vizmm.step(window.vizmm.n)"))
    slider.js_on_change(
        "value", CustomJS(code="window.vizmm && window.vizmm.fromSlider(cb_obj.value)")
    )
    controls = row(first, prev, play, nxt, last, slider, status)
    layout = column(controls, scene.layout)

    pack.update(
        fps=fps,
        sources={name: src.id for name, src in scene.sources.items()},
        divs={view: div.id for view, div in scene.texts.items()},
        slider=slider.id,
        status=status.id,
        play=play.id,
        start=start,
    )
    frames_json = json.dumps(pack, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    j, k, l = trace.shape
    by, bx = replay.block
    title = (
        f"vizmm · {trace.kernel} · M {j}x{k} · N {k}x{l} · TILE_WIDTH {trace.tile_width} · "
        f"block ({by},{bx})"
    )
    help_text = (
        f"{title} · {n} steps ({replay.granularity}, {replay.order}). Keys: ← → step, "
        "space play / pause, Home / End first / last step."
    )
    # The page's own Document: given bare models, file_html makes one and copies
    # into it the JS callbacks of Bokeh's current document (curdoc()), which in a
    # server may be a closed page's destroyed document; every export then failed
    # with "'DocumentCallbackManager' object has no attribute '_js_event_callbacks'".
    doc = Document()
    doc.add_root(layout)
    html = file_html(
        doc,
        _self_contained_resources(),
        title=title,
        template=Template(_HTML_TEMPLATE),
        template_variables={
            "frames_json": frames_json,
            "engine_js": _ENGINE_JS,
            "help_text": help_text,
            "background": scene.palette.BACKGROUND,
            "text": scene.palette.TEXT,
            "muted": scene.palette.MUTED,
        },
        suppress_callback_warning=True,
        theme=None,  # the scene's own colours, not curdoc()'s theme
    )
    return html.encode("utf-8")


# ------------------------------------------------------------------ export
def export_bytes(
    trace: Trace,
    fmt: str,
    block=(0, 0),
    granularity: str = "substep",
    order: str = "lockstep",
    views=None,
    fps: float = 2,
    size=(1280, 720),
    focus: tuple[int, int] | None = None,
    progress: ProgressArg = None,
    theme: str = "light",
    transactions: bool = False,
    warp: int = 0,
    workdir: str | os.PathLike | None = None,
    start: int = 0,
    finding=None,
) -> bytes:
    """The bytes of an export of one block's replay; writes no file but scratch files.

    Parameters
    ----------
    trace : Trace
        A recording of a tiled kernel ('tiled', 'boundary' or 'general').
    fmt : {'gif', 'mp4', 'html'}
    block : (by, bx)
        A block recorded per thread (``trace.has_block``).
    granularity : {'substep', 'phase'}
        One frame per sub-step of Fig. 5.9's loop, or one per phase.
    order : {'lockstep', 'recorded'}
        Barrier arrivals all at once, or in the recorded order.
    views : iterable of str or str, optional
        Which views to draw (a comma-separated string is accepted). GIF/MP4:
        :data:`vizmm.render.pillow.VIEWS`; HTML: the dashboard's
        :data:`vizmm.render.bokeh_scene.VIEWS`. Default: all that the
        trace's size affords (large matrices: no element-by-element M, N, P;
        see :func:`vizmm.render.affordable_views`).
    fps : float
        Frames (steps) per second of the GIF / MP4 and of the HTML's play
        button; > 0 and at most :data:`MAX_FPS`.
    size : (width, height)
        Pixels of the GIF / MP4 frames (fonts and cells scale with it); an
        MP4 needs both even. The HTML page has the dashboard's own sizes.
    focus : (ty, tx), optional
        A thread to follow: its loads and reads are outlined.
    progress : bool, callable or None
        None: a tqdm bar on a terminal for exports of more than
        :data:`PROGRESS_AFTER_FRAMES` frames; True: always a bar; False:
        none; a callable is called as ``progress(done, total)`` after each frame.
    theme : {'light', 'dark'}
        The colours (:mod:`vizmm.render.palette`), the same in every format
        and in the dashboard; ``'dark'`` for dim rooms.
    transactions : bool
        Draw the memory-transactions view (as the dashboard's toggle): the
        current warp's sectors and segments on M and N at the loads, the banks
        of Mds and Nds with the warp's conflicts at each ``k``, a row per warp
        and the totals (:func:`vizmm.memory_transactions`).
    warp : int
        The current warp of that view (the followed thread's when ``focus``).
    workdir : str or os.PathLike, optional
        The folder in which the MP4 encoder makes its scratch folder (a hidden
        ``.vizmm-<pid>-mp4-*.tmp``, removed before this returns or raises);
        default: the system temp folder. :func:`export` passes the
        destination's folder.
    start : int
        HTML: the step (0-based, of the replay's steps) the page opens at, as a
        link to a finding does; the GIF and MP4 always start at step 0.
    finding : Finding or FindingMarks, optional
        A finding of :func:`vizmm.check` of this block, marked on every frame
        as the dashboard marks it (:func:`vizmm.replay.findings.finding_marks`).

    Returns
    -------
    bytes
        The GIF, MP4 or HTML file (one frame per replay step).

    Raises
    ------
    ExportError
        (a ValueError) for an unknown format, a block that was not recorded,
        a bad granularity, order, view, size, fps or theme, a naive-kernel trace.
    """
    fmt = _check_format(fmt)
    theme = _check_theme(theme)
    fps = _check_fps(fps)
    replay = _replay(trace, block, granularity, order, focus, transactions, warp)
    views = _check_views(views, fmt, trace)
    if fmt != "html":
        size = _check_size(size, fmt)
    n = len(replay)
    if isinstance(start, bool) or not isinstance(start, (int, np.integer)) or not 0 <= start < n:
        raise ExportError(f"start must be a step from 0 to {n - 1}, got {start!r}")
    start = int(start)
    marks = finding if isinstance(finding, FindingMarks) or finding is None else None
    if finding is not None and marks is None:
        try:
            marks = finding_marks(finding)
        except AttributeError:
            what = type(finding).__name__
            raise ExportError(
                f"finding must be a Finding of vizmm.check or its marks, got {what}"
            ) from None
    bar = _Progress(progress, n, f"vizmm export {fmt}")
    try:
        if fmt == "html":
            return _html_bytes(trace, replay, views, fps, bar, theme, start, marks)
        from .render.pillow import FrameRenderer

        renderer = FrameRenderer(
            trace, size=size, views=views, theme=theme, transactions=replay.transactions
        )

        def render(i):
            return renderer.render(with_finding(replay.frame(i), marks))

        if fmt == "gif":
            return _gif_bytes(render, n, fps, bar)
        return _mp4_bytes((render(i) for i in range(n)), size, fps, bar, workdir)
    finally:
        bar.close()


def export(trace: Trace, path: str | os.PathLike, fmt: str | None = None, **kwargs) -> str:
    """Write an export of one block's replay to ``path``, atomically.

    The file is written to a temporary file in the same folder and renamed
    into place: a failed export (bad argument, encoder error, interruption)
    leaves no file, and an existing file at ``path`` is replaced only by a
    complete one. The MP4 encoder's scratch folder is made there too, not in
    the system temp folder. A symbolic link is written through, a FIFO or a
    character device written to, never replaced (see
    :func:`~vizmm.trace.fileformat.atomic_write`).

    Parameters
    ----------
    trace : Trace
    path : str or os.PathLike
        Where to write.
    fmt : {'gif', 'mp4', 'html'}, optional
        Default: from the suffix of ``path``.
    **kwargs
        ``block``, ``granularity``, ``order``, ``views``, ``fps``, ``size``,
        ``focus``, ``progress``, ``theme``, ``transactions``, ``warp``, ``start``: see
        :func:`export_bytes`.

    Returns
    -------
    str
        The path written.

    Raises
    ------
    ExportError
        For bad arguments (see :func:`export_bytes`), or a format that
        cannot be told from the path.
    OSError
        When the folder does not exist or is not writable, ``path`` is a
        folder, a socket or a block device, or nothing reads the FIFO.
    """
    path = os.fspath(path)
    fmt = format_from_path(path) if fmt is None else _check_format(fmt)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(2, "no such folder", folder)
    dest = check_writable(path)  # before any frame is drawn
    # scratch files beside the file written; a FIFO's or a device's folder
    # (/dev) is no place for them: the system temp folder then
    kwargs.setdefault("workdir", None if dest.kind in STREAMS else dest.folder)
    data = export_bytes(trace, fmt, **kwargs)
    return atomic_write(path, data)
