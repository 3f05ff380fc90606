"""The browser's modal screens: help, compare, scan a file, export."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from functools import partial

from textual.binding import Binding
from textual.command import Hit, Hits, Provider
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from narcli.tui.data import shown

KEYS = (
    ("/", "search (type to filter; focus starts here)"),
    ("↑ ↓  PgUp PgDn", "move in the table"),
    ("Enter", "open the model (in Similar: jump to that neighbour)"),
    ("Backspace", "back to the previous model"),
    ("1 2 3 4", "Summary, Structure, Similar, Predictions"),
    ("3", "focuses the Similar table: ↑ ↓ pick a neighbour, Enter opens it (2 focuses the Structure tree)"),
    ("space", "mark / unmark the model for comparing"),
    ("c", "compare the two marked models"),
    ("s", "sort by the next column (click a header to sort by it)"),
    ("o", "scan a model file (.py, .onnx, .pt2) and open it"),
    ("e", "export the model's graph (JSON + DOT), or the Similar table (CSV + JSON)"),
    ("Ctrl+P", "command palette: models and families by name"),
    ("?", "this help"),
    ("q  Ctrl+Q", "quit"),
)


class Modal(ModalScreen):
    DEFAULT_CSS = """
    Modal { align: center middle; }
    Modal > Vertical { width: 90%; max-width: 110; height: auto; max-height: 90%; border: round $accent;
                       background: $surface; padding: 0 1; }
    Modal VerticalScroll { height: auto; max-height: 26; }
    Modal Horizontal { height: auto; }
    Modal Input { margin: 0 0 1 0; }
    """
    BINDINGS = [Binding("escape", "dismiss_screen", "close")]

    def action_dismiss_screen(self) -> None:
        self.dismiss(None)


class HelpScreen(Modal):
    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=False, pad_edge=False)
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        for key, what in KEYS:
            table.add_row(key, what)
        with Vertical():
            yield Label("[b]nar tui — keys[/b]  (Esc closes)")
            yield Static(table)


class CompareScreen(Modal):
    def __init__(self, comparison: Any) -> None:
        super().__init__()
        self.comparison = comparison

    def compose(self) -> ComposeResult:
        from narcli.search.text import human, human_params

        c = self.comparison
        figures = Table(box=None, pad_edge=False, header_style="bold")
        for column in ("", shown(c.a.name), shown(c.b.name)):
            figures.add_column(column, overflow="ellipsis", no_wrap=True, max_width=40)
        for label, a, b in (("params", human_params(c.a.params), human_params(c.b.params)), ("MACs", human(c.a.macs), human(c.b.macs)),
                            ("depth", c.a.depth, c.b.depth), ("nodes", c.a.nodes, c.b.nodes)):
            figures.add_row(label, str(a), str(b))
        ops = Table(box=None, pad_edge=False, header_style="bold", title="op counts that differ", title_justify="left")
        for column in ("op", "A", "B"):
            ops.add_column(column)
        for op, a, b in c.op_difference[:12]:
            ops.add_row(shown(op), str(a), str(b))
        same = "the same architecture" if c.same_architecture else "different architectures"
        with Vertical():
            yield Label(f"[b]compare[/b]  cosine {c.cosine:.3f} — {same}  (Esc closes)")
            with VerticalScroll():
                yield Static(figures)
                yield Static(ops if c.op_difference else "no op count differs")
                same_block = [p["a"] for p in c.motifs_paired if p["same_block"]]  # one block, cut elsewhere
                yield Static(_motif_line("motifs shared", c.motifs_shared + same_block))
                for p in (p for p in c.motifs_paired if not p["same_block"]):
                    yield Static(shown(f"alike: {'/'.join(list(p['a']['ops'])[:3])} ~ "
                                       f"{'/'.join(list(p['b']['ops'])[:3])}: {p['difference']}"))
                yield Static(_motif_line("only in A", c.motifs_only_a))
                yield Static(_motif_line("only in B", c.motifs_only_b))


def _motif_line(title: str, motifs: list[dict]) -> Any:
    if not motifs:
        return Text.assemble(shown(title, "bold"), ": none")
    parts = [f"{'/'.join(list(m.get('ops', {}))[:3])} ×{m.get('count', 1)}" for m in motifs[:6]]
    more = f" and {len(motifs) - 6} more" if len(motifs) > 6 else ""
    return Text.assemble(shown(title, "bold"), shown(f" ({len(motifs)}): " + ", ".join(parts) + more))


class OpenScreen(Modal):
    """Asks for a model file and optional --model / input shape / dtype; dismisses with a dict or None."""

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("[b]scan a model file[/b]  (Enter scans, Esc cancels)")
            yield Input(placeholder="a .py, .onnx or .pt2 file, a model folder, pkg.module:Class, cache:NAME or a zoo name", id="path")
            yield Input(placeholder="--model: class or factory in a .py file (optional)", id="model")
            yield Input(placeholder="input shape, e.g. 1,3,224,224 (optional)", id="shape")
            yield Input(placeholder="input dtype: float32 (default), long for token ids (optional)", id="dtype")
            with Horizontal():
                yield Button("Scan", id="scan", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._finish()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "scan":
            self._finish()
        else:
            self.dismiss(None)

    def _finish(self) -> None:
        path = self.query_one("#path", Input).value.strip()
        if not path:
            self.notify("give a file path", severity="warning")
            return
        self.dismiss({"path": path, "model": self.query_one("#model", Input).value.strip() or None,
                      "shape": self.query_one("#shape", Input).value.strip() or None,
                      "dtype": self.query_one("#dtype", Input).value.strip() or None})


class ExportScreen(Modal):
    """Asks for the folder to export into; dismisses with its text or None."""

    def __init__(self, what: str, folder: str) -> None:
        super().__init__()
        self.what, self.folder = what, folder

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"[b]export {self.what}[/b] into the folder (Enter writes, Esc cancels)")
            yield Input(value=self.folder, id="folder")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or self.folder)


class ModelCommands(Provider):
    """Command palette: open a model by name, or filter by a family."""

    async def search(self, query: str) -> Hits:
        app = self.app
        matcher = self.matcher(query)
        families = sorted({e.family for e in app.entries if e.family})
        for family in families:
            score = matcher.match(f"family {family}")
            if score > 0:
                yield Hit(score, matcher.highlight(f"family {family}"), partial(app.show_family, family),
                          help="show this family's models")
        for entry in app.entries:
            score = matcher.match(entry.name)
            if score > 0:
                yield Hit(score, matcher.highlight(entry.name), partial(app.open_key, entry.key),
                          help=f"{entry.family or 'no family'} · {entry.source}")
