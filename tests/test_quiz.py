"""The dashboard's question mode in process: pinning, picks, reveal, score, and no leak.

The no-leak tests build the page's Bokeh document (what the server sends to
the browser) with a question open and look for the answer in every model's
data: the explanation must be absent, and so must the answer wherever the
page could show it (the Mds / Nds slots, the Fig. 5.8 table, the ghost cells,
the thread states, the counters, the status element). The static names of
M's and N's elements (hover text of every cell) are the only place a name
such as ``M_{1,2}`` may appear, as it does with no question open.
"""

import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

pn = pytest.importorskip("panel")

from bokeh.document import Document  # noqa: E402
from bokeh.models import ColumnDataSource  # noqa: E402

from vizmm.render.html_text import visible_lines  # noqa: E402
from vizmm.render.text import render_text  # noqa: E402
from vizmm.replay.questions import block_questions, pick_label  # noqa: E402
from vizmm.serve.catalogue import CATALOGUE  # noqa: E402
from vizmm.trace import Access  # noqa: E402
from vizmm_apps import dashboard as D  # noqa: E402
from vizmm_apps import quiz as Q  # noqa: E402


@pytest.fixture
def dash():
    return D.Dashboard(served=False, addons=[Q.question_mode])


def _document(d) -> Document:
    doc = Document()
    doc.add_root(d.layout.get_root(doc))
    return doc


def _strings(doc: Document, skip_names: bool = True) -> list[str]:
    """Every string the document holds (source columns and model properties)."""
    out = []
    for m in doc.models:
        if isinstance(m, ColumnDataSource):
            for col, values in m.data.items():
                if skip_names and col == "name":
                    continue  # every element's name (hover), with or without a question
                out += [v for v in values if isinstance(v, str)]
        else:
            for v in m.properties_with_values(include_defaults=False).values():
                if isinstance(v, str):
                    out.append(v)
                elif isinstance(v, (list, tuple)):
                    out += [x for x in v if isinstance(x, str)]
    return out


def _doc_json(doc: Document) -> str:
    return json.dumps(doc.to_json(), default=repr)


def test_a_question_pins_the_view_until_revealed(dash):
    s, qm = dash.state, dash.questions
    qm.start_quiz()
    q = qm.question
    assert 5 <= len(qm.quiz) <= 10 and s.step == q.view_step
    for move in (lambda: s.go(q.view_step + 3), s.next, s.last, lambda: s.select_block(1, 1)):
        move()
        assert (s.step, s.by, s.bx) == (q.view_step, *q.block)
    s.handle_key("g")
    assert s.granularity == "substep" and s.step == q.view_step
    s.choose_source("fig5-11")
    assert s.source == "fig5-8"
    # picks by the views' own data (what a tap on a cell selects)
    src = dash._scene.sources["M"].data
    (pick,) = q.answer
    i = next(n for n in range(len(src["row"])) if (src["row"][n], src["col"][n]) == tuple(pick[1:]))
    qm._pick("M", src, i)
    assert qm.picks == {pick}
    qm.submit()
    assert qm.revealed and qm.correct is True and s.step == q.reveal_step
    assert Q._md(q.explanation) in qm.result.object
    s.next()  # free again
    assert s.step == q.reveal_step + 1


def test_wrong_and_multiple_picks_and_the_score(dash):
    s, qm = dash.state, dash.questions
    s.choose_source("fig5-11")
    s.select_block(1, 1)
    qm.start_quiz()
    results = []
    while True:
        q = qm.question
        if q.kind == "zero_fill":
            # click each answer slot, then one more and off again: a set, toggled
            for view, ty, tx in sorted(q.answer):
                data = dash._scene.sources[view].data
                i = next(
                    n for n in range(len(data["ty"])) if (data["ty"][n], data["tx"][n]) == (ty, tx)
                )
                qm._pick(view, data, i)
            data = dash._scene.sources["Mds"].data
            qm._pick("Mds", data, 0)
            qm._pick("Mds", data, 0)
            assert qm.picks == set(q.answer)
        elif q.kind == "copy_m":
            data = dash._scene.sources["M"].data
            wrong = next(
                n
                for n in range(len(data["row"]))
                if ("M", data["row"][n], data["col"][n]) not in q.answer
            )
            qm._pick("M", data, wrong)
        elif q.kind == "loads":
            right = next(iter(q.answer))[1]
            qm.choices.value = q.choices[right]
        qm.submit()
        results.append((q.kind, qm.correct))
        if qm.index + 1 == len(qm.quiz):
            break
        qm.next()
    qm.next()
    assert qm.question is None
    want_right = sum(1 for k, c in results if c)
    assert all(c for k, c in results if k in ("zero_fill", "loads"))
    assert not any(c for k, c in results if k == "copy_m")
    assert qm.status()["score"] == f"{want_right}/{len(results)}"
    assert f"Score: {want_right} of {len(results)}" in qm.prompt.object


CASES = [("fig5-11", (0, 0)), ("fig5-11", (1, 1)), ("fig5-9-3x3", (0, 0))]


@pytest.mark.parametrize("key, block", CASES)
def test_no_answer_in_the_document_before_the_reveal(dash, key, block):
    s, qm = dash.state, dash.questions
    s.choose_source(key)
    s.select_block(*block)
    trace = CATALOGUE.get(key)
    asked = 0
    doc = _document(dash)  # the page; later changes reach its models as patches do
    for q in block_questions(trace, block):
        s.go(len(s.replay) - 1) if not qm.question else None  # the page was anywhere before
        qm.ask(q)
        if not asked:  # the whole serialized page, once (1-2 s each)
            text = _doc_json(doc)
            assert q.prompt.split(":")[0] in text and q.explanation not in text
        every = _strings(doc, skip_names=False)
        assert any(q.prompt.split(":")[0] in v for v in every)  # the question is on the page
        assert not any(q.explanation[:40] in v for v in every)  # ... its explanation is not
        strings = _strings(doc)
        labels = {pick_label(p) for p in q.answer if p[0] in ("M", "N")}
        for label in labels | {render_text(x, "unicode") for x in labels}:
            assert not any(label in v for v in strings), (q.kind, label)
        sources = {
            name: src.data for name, src in dash._scene.sources.items() if name in ("Mds", "Nds")
        }
        if q.kind == "zero_fill":
            shown = {
                (view, ty, tx)
                for view, data in sources.items()
                for ty, tx, st in zip(data["ty"], data["tx"], data["state"], strict=True)
                if "zero" in st
            }
            # what the slots may show: the previous phase's zero-fills, read from the records
            before = set()
            if q.phase > 0:
                for (ty, tx), (m, n) in trace.load_records(block, q.phase - 1).items():
                    before |= {("Mds", ty, tx)} if m.kind == Access.ZERO_FILL else set()
                    before |= {("Nds", ty, tx)} if n.kind == Access.ZERO_FILL else set()
            assert shown == before
        if q.kind == "barrier_wait":
            states = dash._scene.sources["threads"].data["state"]
            assert not any("wait" in st for st in states)
        if q.kind == "loads":
            tiled = int(q.answer_text.split()[0])
            counters = " ".join(visible_lines(dash._scene.texts["counters"].text))
            assert f"so far {tiled:>8d}" not in counters.replace("   ", " ")
        status = dash._status_html()
        assert "explanation" not in status and q.explanation[:40] not in status
        qm.skip()
        # after the reveal the page may show it
        assert Q._md(q.explanation) in qm.result.object
        asked += 1
    assert asked >= 5


def test_the_table_shows_future_cells_again_after_the_question(dash):
    s, qm = dash.state, dash.questions
    q = block_questions(CATALOGUE.get("fig5-8"), (0, 0), ["copy_m"])[-1]  # phase 1
    label = render_text(pick_label(next(iter(q.answer))), "unicode")
    s.go(q.view_step)
    before = " ".join(visible_lines(dash._scene.texts["table"].text))  # as the page shows it
    qm.ask(q)
    during = " ".join(visible_lines(dash._scene.texts["table"].text))
    plain = pick_label(next(iter(q.answer)))
    assert (label in before or plain in before) and label not in during and plain not in during
    qm.skip()
    qm.close()
    s.go(q.view_step)
    after = " ".join(visible_lines(dash._scene.texts["table"].text))
    assert after == before


@pytest.mark.parametrize("granularity", ["substep", "phase"])
@pytest.mark.parametrize("order", ["lockstep", "recorded"])
def test_ask_here_in_every_granularity_and_order(dash, granularity, order):
    """'Ask a question here' asks about the moment shown, whatever the replay's mode."""
    s, qm = dash.state, dash.questions
    s.param.update(granularity=granularity, order=order)
    s.go(s.frame.count // 2)  # the middle of the replay: a phase after the first
    phase = s.frame.step.phase
    qm.ask_here()
    q = qm.question
    assert q is not None and q.block == (s.by, s.bx)
    # the question is asked at this moment or after it, never before (Fig. 5.8's phases)
    assert q.phase >= phase
