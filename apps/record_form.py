"""The dashboard's 'Record a trace' form: kernel, sizes, TILE_WIDTH, seed, backend.

:class:`RecordForm` shows the estimate (or why not) before anything is
recorded (:meth:`vizmm.serve.catalogue.Catalogue.admit`) and hands the
:class:`~vizmm.serve.catalogue.RecordSpec` to the dashboard, which records
it off the server's event loop like any other trace.
"""

from __future__ import annotations

import html
from collections.abc import Callable

import panel as pn
import param

import vizmm
from vizmm.record import in_words
from vizmm.serve import catalogue
from vizmm.serve.catalogue import CATALOGUE
from vizmm.trace import BARRIER_KERNELS, TILED_KERNELS
from vizmm_apps.parts import launch_inputs, on_press

__all__ = ["RecordForm"]


class RecordForm(pn.viewable.Viewer):
    """Record any shape: kernel, sizes, TILE_WIDTH, seed, backend; estimate shown first."""

    kernel: param.Selector[str] = param.Selector(
        default="boundary",
        objects=list(TILED_KERNELS),
        doc="'boundary' Fig. 5.13, 'tiled' Fig. 5.9 (no checks), 'general' j x k . k x l; "
        "contrast kernels: 'uncoalesced' loads, 'conflict' (Nds[tx][k]), 'padded'; "
        "'dynamic' Fig. 5.14 (dynamically sized shared memory)",
    )
    # No bounds here: a value out of range is kept and answered with a message
    # (a bounded parameter would silently keep its old value and a stale estimate).
    j = param.Integer(default=6, label="rows of M (j) / Width")
    k = param.Integer(default=5, label="columns of M = rows of N (k)")
    l = param.Integer(default=7, label="columns of N (l)")  # noqa: E741
    barriers: param.Selector[str] = param.Selector(
        default="both",
        objects=["both", "no barrier 1", "no barrier 2", "none"],
        label="__syncthreads()",
        doc="Barrier lab ('tiled', 'boundary'): keep both barriers (the book), or remove "
        "barrier 1 (after the loads), barrier 2 (after the k loop) or both",
    )
    tile_width = param.Integer(default=2, label="TILE_WIDTH")
    seed = param.Integer(default=0, label="seed of the inputs")
    backend: param.Selector[str] = param.Selector(
        default="simulator", objects=["simulator", "auto", "gpu"]
    )
    estimate = param.String(default="", precedence=-1)
    valid = param.Boolean(default=True, precedence=-1)

    def __init__(self, on_record: Callable[[catalogue.RecordSpec], None], **params):
        super().__init__(**params)
        self._on_record = on_record
        self._button = pn.widgets.Button(label="Record", color="primary", width=120)
        on_press(self._button, self.record)
        self._estimate_pane = pn.pane.Markdown("", margin=(0, 10), styles={"font-size": "0.9em"})
        self._update_estimate()

    def spec(self) -> catalogue.RecordSpec:
        """The recording the form describes (square kernels use j for all three sizes)."""
        if self.kernel == "general":
            j, k, l = self.j, self.k, self.l
        else:
            j = k = l = self.j
        drop_barrier = {"no barrier 1": (1,), "no barrier 2": (2,), "none": (1, 2)}.get(
            self.barriers, ()
        )
        return catalogue.RecordSpec(
            self.kernel, j, k, l, self.tile_width, self.seed, self.backend, drop_barrier
        )

    @param.depends("kernel", "barriers", "j", "k", "l", "tile_width", "seed", "backend", watch=True)
    def _update_estimate(self) -> None:
        """The estimate, or why not, from :func:`vizmm.record.admit` (arithmetic: microseconds)."""
        s = self.spec()
        try:
            if s.seed < 0 or s.seed > 2**32 - 1:
                raise vizmm.RecordError(f"seed must be an integer from 0 to {2**32 - 1}")
            if s.drop_barrier and s.kernel not in BARRIER_KERNELS:
                raise vizmm.RecordError(
                    f"kernel {s.kernel!r} has no __syncthreads() to remove; the barrier lab "
                    f"runs {' and '.join(map(repr, BARRIER_KERNELS))}"
                )
            est = CATALOGUE.admit(
                s.j, s.k, s.l, s.tile_width, s.kernel, None, s.backend, reads=bool(s.drop_barrier)
            )
        except vizmm.RecordError as exc:
            self.param.update(estimate=f"⚠ {in_words(exc, 'page')}", valid=False)
        else:
            text = f"Estimate: {est.describe()}."
            if s.backend != "gpu" and est.simulator_seconds > 30:
                text += " This will take a while; a progress bar shows how far it is."
            self.param.update(estimate=text, valid=True)
        self._button.disabled = not self.valid
        self._estimate_pane.object = self.estimate

    def record(self) -> None:
        """Start the recording (the dashboard loads it like any other trace)."""
        if self.valid:
            self._on_record(self.spec())

    def __panel__(self):
        widgets, extra = launch_inputs(
            self,
            ["kernel", "barriers", "j", "tile_width", "seed", "backend"],
            {
                "kernel": pn.widgets.RadioButtonGroup,
                "barriers": pn.widgets.RadioButtonGroup,
                "backend": pn.widgets.RadioButtonGroup,
                "j": pn.widgets.IntInput,
                "tile_width": pn.widgets.IntInput,
                "seed": pn.widgets.IntInput,
            },
            330,
        )
        # a row of buttons shows no name of its own: its label above it, as the inputs have
        rows = []
        for w in widgets.layout.objects:
            if isinstance(w, pn.widgets.RadioButtonGroup):
                rows.append(
                    pn.pane.HTML(
                        f'<div class="vizmm-form-label">{html.escape(w.name)}</div>',
                        margin=(5, 10, 0, 10),
                    )
                )
            rows.append(w)
        widgets.layout.objects = rows
        return pn.Column(widgets, extra, self._estimate_pane, self._button, width=350)
