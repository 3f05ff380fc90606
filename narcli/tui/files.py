"""The browser's file actions: scan a model file from inside (in a worker; the new model is added
to the table and opened) and export the open model's graph or its Similar table."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from textual import work
from textual.widgets import TabbedContent

from narcli.tui import data
from narcli.tui.screens import ExportScreen, OpenScreen


class FileActions:
    """Mixed into `NarApp` (which has `entries`, `by_key`, `current`, `similar_result`, `tell`...)."""

    entries: list[data.Entry]
    by_key: dict[str, data.Entry]
    current: str | None
    similar_result: Any

    def action_open_file(self) -> None:
        self.push_screen(OpenScreen(), self.start_scan)

    def start_scan(self, request: dict | None) -> None:
        if request:
            self.tell(f"scanning {request['path']}…", title="scan")
            self.scan_in_background(request)

    @work(thread=True, exclusive=True, group="scan")
    def scan_in_background(self, request: dict) -> None:
        from narcli.errors import NarError

        try:
            records = data.scan_request(request)
        except NarError as exc:
            self.call_from_thread(self.tell, exc, title="scan failed", severity="error")
            return
        except Exception as exc:  # noqa: BLE001
            self.call_from_thread(self.tell, f"internal error: {type(exc).__name__}: {exc}", title="scan failed",
                                  severity="error")
            return
        if isinstance(records, str):  # a zoo model: it is in the table already
            self.call_from_thread(self.open_key, records)
            return
        self.call_from_thread(self.add_scanned, records)

    def add_scanned(self, records: list) -> None:
        added = [data.cache_entry(r) for r in records if r.graph_key]
        for entry in added:
            if entry.key not in self.by_key:
                self.entries.append(entry)
            self.by_key[entry.key] = entry
        self.shown = []
        self.refresh_table()
        if added:
            self.tell(f"scanned {', '.join(e.name for e in added)}", title="scan")
            self.open_key(added[0].key)

    def action_export(self) -> None:
        if self.current is None:
            self.notify("open a model first (Enter)", severity="warning")
            return
        similar = self.query_one("#detail", TabbedContent).active == "similar" and self.similar_result is not None
        what = "the Similar table (CSV + JSON)" if similar else "the graph (JSON + DOT)"
        self.push_screen(ExportScreen(what, str(Path.cwd() / "nar-export")), partial(self.export, similar))

    def export(self, similar: bool, folder: str | None) -> None:
        if not folder:
            return
        entry = self.by_key[self.current]
        try:
            paths = (data.export_similar(self.similar_result, Path(folder), entry.name) if similar
                     else data.export_graph(entry, Path(folder)))
        except OSError as exc:
            self.tell(f"{exc.filename or folder}: {exc.strerror or exc}", title="export failed", severity="error")
            return
        self.tell("wrote " + ", ".join(str(p) for p in paths), title="export")

