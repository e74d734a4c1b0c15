"""The trace-file upload: a small ``JSComponent`` that sends a file in chunks.

The page (:class:`FileSender`) reads the chosen (or dropped) file in
slices of :attr:`UploadBox.chunk_size` bytes and sends each with the
component's ``model.send_msg``; Python receives them through Panel's
public ``on_msg`` (:meth:`UploadBox.receive`) and adds them up. Chunks keep every
websocket message small (one message over Bokeh's 20 MB limit would close
the session), and the size is checked before a byte is kept: the page
sends nothing of a file over :attr:`UploadBox.limit` (only its name and
size, so the server can say why), and the server forgets any upload whose
declared size, count of chunks or bytes received add up to more, whatever
the page says.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import panel as pn
import param
from panel.custom import JSComponent

from vizmm.serve import catalogue
from vizmm.trace import human_bytes

__all__ = ["FileSender", "UploadBox"]


class FileSender(JSComponent):
    """The page's half of :class:`UploadBox`: a file chooser and drop area sending chunks.

    Each chunk goes to Python as ``model.send_msg({name, size, chunk,
    total_chunks, data})`` (``chunk`` 1-based, ``data`` an ``ArrayBuffer``);
    a file over :attr:`limit` is sent as its name and size only. A change of
    :attr:`note` stops the file being sent and shows the note.

    Parameters
    ----------
    **params
        The component's parameters.
    """

    limit = param.Integer(default=0, bounds=(0, None), doc="Largest file sent (bytes).")
    chunk_size = param.Integer(
        default=1_000_000, bounds=(1, None), doc="Bytes per message sent by the page."
    )
    note = param.String(default="", doc="Why the file being sent was refused ('' if it was not).")

    _esm = """
    export function render({ model, el }) {
      const box = document.createElement("div");
      box.className = "vizmm-upload";
      const input = document.createElement("input");
      input.type = "file";
      input.setAttribute("aria-label", "Trace file (.vizmm)");
      const note = document.createElement("div");
      note.className = "vizmm-upload-note";
      note.setAttribute("role", "status");
      note.setAttribute("aria-live", "polite");
      const idle = "or drop a .vizmm file here";
      note.textContent = idle;
      box.append(input, note);
      el.appendChild(box);
      let current = 0;  // the upload in flight: a newer one, or a refusal, stops it
      const send = async (file) => {
        const id = ++current;
        const size = model.chunk_size;
        const total = Math.max(1, Math.ceil(file.size / size));
        const head = { name: file.name, size: file.size, total_chunks: total };
        if (file.size > model.limit) {  // its name and size only: the server says why
          model.send_msg({ ...head, chunk: 1, data: new ArrayBuffer(0) });
          return;
        }
        for (let i = 0; i < total; i++) {
          if (id !== current) return;
          const start = i * size;
          const end = Math.min(start + size, file.size);
          const data = await file.slice(start, end).arrayBuffer();
          if (id !== current) return;
          model.send_msg({ ...head, chunk: i + 1, data });
          const percent = Math.round((100 * end) / Math.max(1, file.size));
          note.textContent = `Sending ${file.name}: ${percent}%`;
        }
        note.textContent = `Sent ${file.name}`;
      };
      input.addEventListener("change", () => {
        if (input.files.length) send(input.files[0]);
      });
      box.addEventListener("dragover", (e) => {
        e.preventDefault();
        box.classList.add("over");
      });
      box.addEventListener("dragleave", () => box.classList.remove("over"));
      box.addEventListener("drop", (e) => {
        e.preventDefault();
        box.classList.remove("over");
        if (e.dataTransfer.files.length) send(e.dataTransfer.files[0]);
      });
      model.on("note", () => {
        if (model.note) {
          current++;
          note.textContent = model.note;
        }
      });
    }
    """

    _stylesheets = [
        ".vizmm-upload { border: 2px dashed #8a8a8a; border-radius: 6px; padding: 8px; }"
        ".vizmm-upload.over { border-color: #1f77b4; }"
        ".vizmm-upload-note { margin-top: 4px; font-size: 13px; opacity: 0.8; }"
    ]


class UploadBox(pn.viewable.Viewer):
    """The 'Load a trace file' box: a file chosen (or dropped) and sent in 1 MB chunks.

    Shown as a :class:`FileSender`, whose messages :meth:`receive` takes
    (Panel's ``on_msg``). :attr:`value` becomes ``{name: bytes}`` once a
    file has arrived whole; :attr:`refused` says why the last upload was
    refused (over :attr:`limit`, empty, broken), '' when it was not.

    Parameters
    ----------
    **params
        The box's parameters; :attr:`limit` is
        :data:`vizmm.serve.catalogue.MAX_UPLOAD_BYTES` unless given, and the
        layout's (``width``, ``margin``) go to the :class:`FileSender`.
    """

    value = param.Dict(default={}, doc="The last file received whole, ``{name: bytes}``.")
    refused = param.String(default="", doc="Why the last upload was refused ('' if it was not).")
    limit = param.Integer(default=0, bounds=(0, None), doc="Largest file accepted (bytes).")
    chunk_size = param.Integer(
        default=1_000_000, bounds=(1, None), doc="Bytes per message sent by the page."
    )

    def __init__(self, **params):
        layout = {k: params.pop(k) for k in ("width", "margin", "sizing_mode") if k in params}
        params.setdefault("limit", catalogue.MAX_UPLOAD_BYTES)
        super().__init__(**params)
        self._parts: dict[str, list[bytes]] = {}
        self.sender = FileSender(limit=self.limit, chunk_size=self.chunk_size, **layout)
        self.sender.on_msg(lambda event: self.receive(event.data))
        self.param.watch(self._tell_page, ["refused", "limit", "chunk_size"])

    def __panel__(self) -> FileSender:
        """The :class:`FileSender` showing this box (one, made with it)."""
        return self.sender

    @property
    def pending(self) -> tuple[str, ...]:
        """The names of the uploads begun and not yet whole (their chunks held)."""
        return tuple(self._parts)

    def receive(self, message: Mapping[str, Any]) -> None:
        """Take one chunk of an upload, as the page sends it.

        The first chunk of a file starts it (again) and forgets any upload
        not finished, so the box holds one file's chunks at most. A later
        chunk of a file not begun (or refused) is ignored, one out of order
        refuses it. An upload is refused, its chunks forgotten and
        :attr:`refused` set, as soon as its declared size, its count of
        chunks or the bytes received pass :attr:`limit`, or when the whole
        file is empty; the last chunk of one accepted sets :attr:`value` to
        ``{name: bytes}``.

        Parameters
        ----------
        message : mapping
            ``name`` (str), ``chunk`` (1-based int), ``total_chunks`` (int),
            ``data`` (bytes of this chunk) and ``size`` (int, the whole
            file's bytes, optional).
        """
        name = str(message.get("name") or "upload.vizmm")
        chunk, total = message.get("chunk"), message.get("total_chunks")
        if not (isinstance(chunk, int) and isinstance(total, int) and 1 <= chunk <= total):
            self._parts.pop(name, None)
            self._refuse(f"Could not load {name}: the page sent a broken upload; try again")
            return
        if chunk == 1:
            self._parts = {name: []}  # one upload at a time: an unfinished one is forgotten
        elif name not in self._parts:
            return  # the rest of a refused (or never started) upload
        parts = self._parts[name]
        if chunk != len(parts) + 1:
            del self._parts[name]
            self._refuse(f"Could not load {name}: its parts came out of order; try again")
            return
        data = bytes(message.get("data") or b"")
        size = message.get("size")
        declared = max((total - 1) * self.chunk_size, size if isinstance(size, int) else 0)
        if declared > self.limit or sum(map(len, parts)) + len(data) > self.limit:
            del self._parts[name]
            self._refuse(
                f"Could not load {name}: it is over this server's upload limit of "
                f"{human_bytes(self.limit)}"
            )
            return
        parts.append(data)
        if chunk < total:
            return
        whole = b"".join(self._parts.pop(name))
        if not whole:
            self._refuse(f"Could not load {name}: the file is empty")
            return
        self.refused = ""
        self.value = {name: whole}

    def _tell_page(self, event) -> None:
        if event.name == "refused":
            self.sender.note = ""  # the same refusal again is news too
            self.sender.note = event.new
        else:
            self.sender.param.update({event.name: event.new})

    def _refuse(self, why: str) -> None:
        if self.refused == why:
            self.param.trigger("refused")  # the same refusal again: said again
        else:
            self.refused = why
