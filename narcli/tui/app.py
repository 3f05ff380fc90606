"""`nar tui`: the Textual app. Left: search box, filters and the table of every zoo model and cached
scan. Right: the selected model in tabs (Summary, Structure, Similar, Predictions). Details load in
worker threads so typing and moving never wait for them; what the library raises becomes a
notification with the CLI's one-line message, and the app keeps running."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Input, Select, Static, TabbedContent, TabPane, Tree

from narcli.errors import printable
from narcli.tui import data
from narcli.tui.files import FileActions
from narcli.tui.screens import CompareScreen, HelpScreen, ModelCommands
from narcli.tui.signals import close_on_sigterm

FILTERS = ("source", "family", "task", "coarse")
DEBOUNCE = 0.04  # seconds of quiet typing before the table filters
TABS = ("summary", "structure", "similar", "predictions")


class Panes(Horizontal):
    """The browser and the details side by side; the table's columns follow the terminal's width."""

    def on_resize(self, event: Any) -> None:
        self.app.lay_out(event.size.width < data.NARROW_BELOW)


class NarApp(FileActions, App):
    TITLE = "nar"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (data.NARROW_BELOW, "-wide")]  # a class on the screen, for CSS
    COMMANDS = App.COMMANDS | {ModelCommands}
    CSS = """
    #browser { width: 4fr; min-width: 34; }
    #detail { width: 5fr; min-width: 40; }
    .-narrow #browser { width: 38; min-width: 0; }
    .-narrow #detail { width: 1fr; min-width: 0; }
    #filters { height: 1; }
    #filters Select { width: 1fr; }
    #models { height: 1fr; }
    #status { height: auto; max-height: 3; color: $text-muted; padding: 0 1; }
    TabPane { padding: 0 1; }
    """
    BINDINGS = [
        Binding("/", "focus_search", "search"),
        Binding("space", "mark", "mark"),
        Binding("c", "compare", "compare"),
        Binding("o", "open_file", "scan file"),
        Binding("e", "export", "export"),
        Binding("s", "sort_next", "sort", show=False),
        Binding("backspace", "back", "back", show=False),
        Binding("1", "tab('summary')", "summary", show=False),
        Binding("2", "tab('structure')", "structure", show=False),
        Binding("3", "tab('similar')", "similar", show=False),
        Binding("4", "tab('predictions')", "predictions", show=False),
        Binding("question_mark", "help", "help"),
        Binding("q", "quit", "quit"),
        Binding("ctrl+q", "quit", "quit", show=False, priority=True),
    ]

    def __init__(self, target: str | None = None, entries: list[data.Entry] | None = None, blink: bool = True) -> None:
        super().__init__()
        # Scans run user code in a child process; once torch is loaded here that child is spawned,
        # and spawning starts multiprocessing's resource tracker, which hands the child our stderr.
        # Textual replaces stderr with an object without a file descriptor, so start the tracker now.
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()
        self.blink = blink  # off in snapshot tests: frames must not depend on the cursor's phase
        self.entries = entries if entries is not None else data.load_entries()
        self.by_key = {e.key: e for e in self.entries}
        self.initial = target
        self.shown: list[str] = []  # keys in the table, in table order
        self.marked: list[str] = []
        self.history: list[str] = []
        self.current: str | None = None
        self.similar_result: Any = None
        self.family: Any = None  # the open model's family prediction (from Similar), for Predictions
        self.sort_column = "name"
        self._debounce: Timer | None = None
        self.terminated = False  # SIGTERM asked the app to close
        self.narrow: bool | None = None  # laid out for a terminal under data.NARROW_BELOW columns
        self.name_width = data.WIDTHS["name"]

    # -- layout -------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Panes():
            with Vertical(id="browser"):
                yield Input(placeholder="search names and families  ( / )", id="search")
                with Horizontal(id="filters"):
                    for column in FILTERS:
                        options = [(v, v) for v in data.filter_values(self.entries, column)]
                        yield Select(options, prompt=column, id=f"filter-{column}", compact=True)
                yield DataTable(id="models", cursor_type="row", zebra_stripes=True)
                yield Static(id="status")
            with TabbedContent(id="detail", initial="summary"):
                with TabPane("Summary", id="summary"):
                    yield VerticalScroll(Static("select a model", id="summary-body"))
                with TabPane("Structure", id="structure"):
                    yield Tree("motifs", id="structure-tree")
                with TabPane("Similar", id="similar"):
                    yield Static("", id="similar-head")
                    yield DataTable(id="similar-table", cursor_type="row")
                with TabPane("Predictions", id="predictions"):
                    yield VerticalScroll(Static("", id="predictions-body"))
        yield Footer(compact=True)  # every key's label fits in 80 columns

    def on_mount(self) -> None:
        close_on_sigterm(self)
        self.lay_out(self.size.width < data.NARROW_BELOW)
        search = self.query_one("#search", Input)
        search.cursor_blink = self.blink
        search.focus()
        if self.initial:
            entry = data.find_entry(self.entries, self.initial)
            if entry is None:
                self.tell(f"{self.initial!r} is not in the zoo or the cache", severity="warning")
            else:
                self.open_key(entry.key)

    def lay_out(self, narrow: bool) -> None:
        """A narrow terminal splits the screen in halves and the table shows name and family (names
        cut in the middle); a wide one gives the table more columns."""
        if narrow == self.narrow:
            return
        self.narrow = narrow
        table = self.query_one("#models", DataTable)
        table.clear(columns=True)
        widths = data.NARROW_WIDTHS if narrow else data.WIDTHS
        for column in data.COLUMNS:
            table.add_column(column, key=column, width=widths[column])
        self.name_width = widths["name"]
        self.shown = []
        self.refresh_table()
        if self.current in self.shown:
            table.move_cursor(row=self.shown.index(self.current))
        similar = self.query_one("#similar-table", DataTable)  # cosine next to the name: never scrolled away
        similar.clear(columns=True)
        for column in ("name", "cosine", "family", "shared motifs"):
            similar.add_column(column, key=column, width=data.SIMILAR_WIDTHS[narrow].get(column))
        self.fill_similar()

    # -- the table ----------------------------------------------------------------------------------
    def filters(self) -> dict[str, str]:
        out = {}
        for column in FILTERS:
            value = self.query_one(f"#filter-{column}", Select).value
            if isinstance(value, str):
                out[column] = value
        return out

    def search_text(self) -> str:
        """The query without leading slashes: the search box has focus from the start, so the "/"
        the footer offers for search lands in it ("/patchgan"); a zoo key never starts with one."""
        return self.query_one("#search", Input).value.lstrip("/")

    def wanted(self) -> list[str]:
        text = self.search_text()
        filters = self.filters()
        found = [e for e in self.entries if data.matches(e, text, filters)]
        numeric = self.sort_column in ("params", "MACs", "nodes")
        found.sort(key=lambda e: e.sort_value(self.sort_column), reverse=numeric)
        if text.strip():  # the exact name first, then names that start with it (the sort is stable)
            found.sort(key=lambda e: data.relevance(e, text))
        return [e.key for e in found]

    def refresh_table(self) -> None:
        """Show the rows that match: removed by key when the set only shrinks, else rebuilt."""
        from textual.css.query import NoMatches

        try:
            table = self.query_one("#models", DataTable)
        except NoMatches:  # a debounced refresh firing while the app closes
            return
        keys = self.wanted()
        keep = set(keys)
        if self.shown and keep <= set(self.shown) and len(self.shown) - len(keys) < 400 \
                and [k for k in self.shown if k in keep] == keys:  # same order: removing rows is enough
            for key in self.shown:
                if key not in keep:
                    table.remove_row(key)
        else:
            table.clear()
            for key in keys:
                table.add_row(*self.by_key[key].cells(self.name_width), key=key)
        self.shown = keys
        self.update_status()

    def update_status(self) -> None:
        """How many rows and their order (a search puts the best match first, as `wanted` sorts); the
        marked models on a line of their own, never cut off."""
        searching = bool(self.search_text().strip())
        counts = f"{len(self.shown):,}/{len(self.entries):,} · " if self.narrow else \
            f"{len(self.shown):,} of {len(self.entries):,} models · "
        order = ("best match first" if self.narrow else f"best match first, then {self.sort_column}") if searching \
            else f"sorted by {self.sort_column}"  # narrow: one line, not a wrapped half-phrase
        marked = ["\n", data.shown("marked: " + ", ".join(self.by_key[k].label for k in self.marked))] if self.marked else []
        self.query_one("#status", Static).update(Text.assemble(data.shown(counts + order), *marked))

    @on(Input.Changed, "#search")
    def search_changed(self) -> None:
        if self._debounce is not None:
            self._debounce.stop()
        self._debounce = self.set_timer(DEBOUNCE, self.refresh_table)

    def on_key(self, event) -> None:
        if event.key == "down" and self.focused is self.query_one("#search", Input):
            self.query_one("#models", DataTable).focus()
            event.stop()

    @on(Input.Submitted, "#search")
    def search_submitted(self) -> None:
        """Enter in the search box opens the highlighted row (the first match unless moved)."""
        if self._debounce is not None:  # the table may still show the previous query
            self._debounce.stop()
            self.refresh_table()
        self.query_one("#models", DataTable).focus()
        key = self.selected_key()
        if key is not None:
            self.open_key(key)

    @on(Select.Changed)
    def filter_changed(self) -> None:
        self.refresh_table()

    @on(DataTable.HeaderSelected, "#models")
    def header_selected(self, event: DataTable.HeaderSelected) -> None:
        self.sort_column = str(event.column_key.value)
        self.shown = []
        self.refresh_table()

    def action_sort_next(self) -> None:
        self.sort_column = data.COLUMNS[(data.COLUMNS.index(self.sort_column) + 1) % len(data.COLUMNS)]
        self.shown = []
        self.refresh_table()

    def selected_key(self) -> str | None:
        table = self.query_one("#models", DataTable)
        if not self.shown or table.cursor_row is None or table.cursor_row >= len(self.shown):
            return None
        return self.shown[table.cursor_row]

    @on(DataTable.RowSelected, "#models")
    def row_selected(self, event: DataTable.RowSelected) -> None:
        self.open_key(str(event.row_key.value))

    # -- details ------------------------------------------------------------------------------------
    def open_key(self, key: str, remember: bool = True) -> None:
        entry = self.by_key.get(key)
        if entry is None:
            return
        if remember and self.current and self.current != key:
            self.history.append(self.current)
        self.current = key
        if key in self.shown:
            self.query_one("#models", DataTable).move_cursor(row=self.shown.index(key))
        loading = Text.assemble(data.shown(entry.label, "bold"), "\nloading…")  # every tab names the model
        for pane in ("#summary-body", "#predictions-body", "#similar-head"):
            self.query_one(pane, Static).update(loading)
        self.query_one("#similar-table", DataTable).clear()
        self.query_one("#structure-tree", Tree).clear()
        self.load_details(entry)

    def tell(self, message: object, **options: Any) -> None:
        """A notification whose text comes from outside: shown as text, controls escaped."""
        self.notify(printable(message), markup=False, **{k: printable(v) if k == "title" else v
                                                          for k, v in options.items()})

    def show_family(self, family: str) -> None:
        self.query_one("#filter-family", Select).value = family

    @work(thread=True, exclusive=True, group="details")
    def load_details(self, entry: data.Entry) -> None:
        for name, fn in (("summary", data.summary), ("structure", data.structure), ("similar", data.similar),
                         ("predictions", data.predictions)):
            try:
                result = fn(entry)
            except Exception as exc:  # noqa: BLE001 - shown to the user; the app keeps running
                self.call_from_thread(self.show_error, name, entry, exc)
                continue
            self.call_from_thread(getattr(self, f"show_{name}"), entry, result)

    def show_error(self, name: str, entry: data.Entry, exc: Exception) -> None:
        from narcli.errors import NarError

        message = str(exc) if isinstance(exc, NarError) else f"internal error: {type(exc).__name__}: {exc}"
        widget = {"summary": "#summary-body", "predictions": "#predictions-body", "similar": "#similar-head"}.get(name)
        if widget:
            self.query_one(widget, Static).update(data.shown(message, "red"))
        self.tell(message, title=f"{entry.name}: {name}", severity="error")

    def show_summary(self, entry: data.Entry, rows: list[tuple[str, str]]) -> None:
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold cyan", no_wrap=True)
        grid.add_column()
        for label, value in rows:
            grid.add_row(label, data.shown(value))
        self.query_one("#summary-body", Static).update(grid)

    def show_structure(self, entry: data.Entry, found: dict[str, Any]) -> None:
        tree = self.query_one("#structure-tree", Tree)
        tree.clear()
        tree.root.set_label(data.shown(f"{entry.name}: {found['nodes']} nodes in {found['instances']} motif instances"))
        for motif in found["motifs"]:
            repeat = f" × {motif['count']}" if motif["count"] > 1 else ""
            branch = tree.root.add(Text.assemble(data.shown(motif["label"], "bold"), repeat), expand=False)
            branch.add_leaf(data.shown("ops: " + ", ".join(f"{op} ×{n}" for op, n in motif["ops"].items())))
            at = motif["at"]
            branch.add_leaf("at nodes " + ", ".join(str(a) for a in at[:12]) + (" …" if len(at) > 12 else ""))
        tree.root.expand()

    def show_similar(self, entry: data.Entry, result: Any) -> None:
        from narcli.search.text import prediction_line

        self.similar_result = result
        head = Text.assemble(data.shown(entry.label, "bold"), "\n", Text.from_markup(prediction_line(result.prediction)))
        from narcli.search.similar import ORDER_NOTE, STEM_NOTE

        for shown, note in ((getattr(result, "reordered", False), ORDER_NOTE),
                            (getattr(result, "stem_searched", False), STEM_NOTE)):
            if shown:
                head.append(f"\n{note}", style="dim")
        self.query_one("#similar-head", Static).update(head)
        self.fill_similar()
        self.family = result.prediction
        predicted = (result.prediction.family or "new", result.prediction.coarse or "")
        if entry.record is not None and (entry.family, entry.coarse) != predicted:
            entry.set_family(*predicted)  # a scan added here: its family and coarse class are known now
            if entry.key in self.shown:
                table = self.query_one("#models", DataTable)
                table.update_cell(entry.key, "family", entry.cells(self.name_width)[1])
                table.update_cell(entry.key, "coarse", entry.cells(self.name_width)[2])

    def fill_similar(self) -> None:
        table = self.query_one("#similar-table", DataTable)
        table.clear()
        width = data.SIMILAR_WIDTHS[bool(self.narrow)]["name"]
        for i, n in enumerate(self.similar_result.neighbours if self.similar_result is not None else []):
            shared = ", ".join("/".join(list(m.get("ops", {}))[:2]) for m in n.shared[:3]) or "—"
            table.add_row(data.shown(data.fit(n.name, width)), f"{n.cosine:.3f}", data.shown(n.family or "—"),
                          data.shown(shared), key=f"{i}")

    def show_predictions(self, entry: data.Entry, rows: list) -> None:
        self.query_one("#predictions-body", Static).update(data.predictions_view(rows, self.family, entry.label))

    @on(DataTable.RowSelected, "#similar-table")
    def jump(self, event: DataTable.RowSelected) -> None:
        if self.similar_result is None:
            return
        neighbour = self.similar_result.neighbours[int(str(event.row_key.value))]
        entry = self.by_key.get(neighbour.name) or next(
            (e for e in self.entries if e.zoo_model is not None and e.zoo_model.graph_hash == neighbour.graph_hash), None)
        if entry is None:
            self.tell(f"{neighbour.name} is not in the table", severity="warning")
            return
        self.search_for(entry)
        self.open_key(entry.key)

    def search_for(self, entry: data.Entry) -> None:
        """Walking to another model puts its name in the search box, so the box, the table and the
        detail speak of one model."""
        search = self.query_one("#search", Input)
        if self._debounce is not None:
            self._debounce.stop()
        with search.prevent(Input.Changed):
            search.value = entry.label
        self.refresh_table()

    def action_back(self) -> None:
        if isinstance(self.focused, Input):
            return
        if not self.history:
            self.notify("no earlier model", severity="information")
            return
        key = self.history.pop()
        self.search_for(self.by_key[key])
        self.open_key(key, remember=False)

    def action_tab(self, tab: str) -> None:
        """Show a detail tab and move the keyboard into it, so ↓ and Enter walk the Similar rows."""
        if not isinstance(self.focused, Input):
            self.query_one("#detail", TabbedContent).active = tab
            inside = {"similar": "#similar-table", "structure": "#structure-tree"}.get(tab)
            if inside:
                self.query_one(inside).focus()

    def action_focus_search(self) -> None:
        self.query_one("#search", Input).focus()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    # -- marking and comparing ------------------------------------------------------------------------
    def action_mark(self) -> None:
        key = self.selected_key()
        if key is None:
            return
        if key in self.marked:
            self.marked.remove(key)
        else:
            self.marked = (self.marked + [key])[-2:]
        self.update_status()

    def action_compare(self) -> None:
        if len(self.marked) != 2:
            self.notify("mark two models with space first", severity="warning")
            return
        self.run_compare(self.by_key[self.marked[0]], self.by_key[self.marked[1]])

    @work(thread=True, exclusive=True, group="compare")
    def run_compare(self, a: data.Entry, b: data.Entry) -> None:
        try:
            result = data.compare(a, b)
        except Exception as exc:  # noqa: BLE001
            self.call_from_thread(self.show_error, "compare", a, exc)
            return
        self.call_from_thread(self.push_screen, CompareScreen(result))


def run(target: str | None = None) -> None:
    app = NarApp(target)
    app.run()
    if app.terminated:
        raise SystemExit(128 + 15)  # the status a shell expects after SIGTERM
