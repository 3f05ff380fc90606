"""`nar tui` driven with Textual's pilot: search, details, walking Similar and back, marking and
comparing, scanning from inside (and a broken file), exporting, help. Data: the bundled zoo and a
temporary NAR_HOME (conftest)."""

import asyncio
import io
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("textual")

from narcli.tui.app import NarApp  # noqa: E402

SIZE = (120, 34)


def run_app(script, *, target=None, blink=False):
    """Run `script(app, pilot)` inside a running app; returns what it returns."""

    async def main():
        app = NarApp(target, blink=blink)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            return await script(app, pilot)

    return asyncio.run(main())


def rendered_text(renderable):
    from rich.console import Console

    console = Console(width=100, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


async def settle(app, pilot, seconds=0.3):
    await pilot.pause(seconds)
    await app.workers.wait_for_complete()
    await pilot.pause()


def test_search_filters_the_table():
    async def script(app, pilot):
        total = len(app.shown)
        await pilot.press(*"resnet50")
        await pilot.pause(0.4)
        return total, [app.by_key[k] for k in app.shown]

    total, shown = run_app(script)
    assert total > 2000
    assert 0 < len(shown) < 200
    assert all("resnet50" in e.haystack for e in shown)


def test_a_filter_narrows_to_one_source():
    async def script(app, pilot):
        app.query_one("#filter-source").value = "torchvision"
        await pilot.pause(0.2)
        return {app.by_key[k].source for k in app.shown}

    assert run_app(script) == {"torchvision"}


def test_enter_opens_the_detail_and_similar_walks_and_back_returns():
    async def script(app, pilot):
        await pilot.press(*"resnet50")
        await pilot.pause(0.4)
        app.query_one("#models").move_cursor(row=app.shown.index("timm/resnet50"))
        await pilot.press("down", "up")  # focus the table, land back on resnet50
        app.query_one("#models").focus()
        app.query_one("#models").move_cursor(row=app.shown.index("timm/resnet50"))
        await pilot.press("enter")
        await settle(app, pilot)
        opened = app.current
        summary = rendered_text(app.query_one("#summary-body").content)
        await pilot.press("3")
        app.query_one("#similar-table").focus()
        await pilot.press("enter")  # the nearest neighbour
        await settle(app, pilot)
        walked = app.current
        await pilot.press("backspace")
        await settle(app, pilot)
        return opened, walked, app.current, len(app.similar_result.neighbours), summary

    opened, walked, back, neighbours, summary = run_app(script)
    assert opened == "timm/resnet50" and "params" in summary and "MACs" in summary
    assert walked != opened and neighbours == 10
    assert back == "timm/resnet50"


def test_marking_two_and_comparing_shows_both_sides():
    from narcli.tui.screens import CompareScreen

    async def script(app, pilot):
        table = app.query_one("#models")
        table.focus()
        for key in ("timm/resnet50", "timm/resnet18"):
            table.move_cursor(row=app.shown.index(key))
            await pilot.press("space")
        await pilot.press("c")
        await settle(app, pilot)
        screen = app.screen
        return type(screen), getattr(screen, "comparison", None), list(app.marked)

    kind, comparison, marked = run_app(script)
    assert marked == ["timm/resnet50", "timm/resnet18"]
    assert kind is CompareScreen
    assert {comparison.a.name, comparison.b.name} == {"timm/resnet50", "timm/resnet18"}
    assert 0 < comparison.cosine <= 1


def test_comparing_needs_two_marks():
    async def script(app, pilot):
        app.query_one("#models").focus()
        await pilot.press("c")
        await pilot.pause()
        return [n.message for n in app._notifications]

    assert any("mark two models" in m for m in run_app(script))


def test_scanning_from_inside_adds_and_opens_the_model(tmp_path):
    model = tmp_path / "tiny_net.py"
    model.write_text("from torch import nn\n\nclass TinyNet(nn.Module):\n    def __init__(self):\n"
                     "        super().__init__()\n        self.fc = nn.Linear(8, 4)\n\n"
                     "    def forward(self, x):\n        return self.fc(x).relu()\n")

    async def script(app, pilot):
        app.query_one("#models").focus()
        await pilot.press("o")
        await pilot.pause()
        app.screen.query_one("#path").value = str(model)
        app.screen.query_one("#shape").value = "1,8"
        await pilot.press("enter")
        for _ in range(120):
            await settle(app, pilot, 0.5)
            if app.current and app.current.startswith("cache:"):
                break
        return app.by_key.get(app.current), len(app.entries)

    entry, _ = run_app(script)
    assert entry is not None and entry.name == "tiny_net.py:TinyNet" and entry.source == "cache"


def test_a_broken_file_is_a_notification_and_the_app_keeps_running(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("this is not python (\n")

    async def script(app, pilot):
        app.query_one("#models").focus()
        await pilot.press("o")
        await pilot.pause()
        app.screen.query_one("#path").value = str(broken)
        await pilot.press("enter")
        for _ in range(120):
            await settle(app, pilot, 0.5)
            if any(n.severity == "error" for n in app._notifications):
                break
        errors = [n.message for n in app._notifications if n.severity == "error"]
        await pilot.press("slash", *"vgg")
        await pilot.pause(0.4)
        return errors, app.is_running, len(app.shown)

    errors, running, shown = run_app(script)
    assert errors and "broken.py" in errors[0] and "Traceback" not in errors[0]
    assert running and shown > 0


def test_export_writes_parseable_json_and_dot(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    async def script(app, pilot):
        await settle(app, pilot)
        app.query_one("#models").focus()  # focus starts in the search box, where "e" is a letter
        await pilot.press("e")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        app.query_one("#detail").active = "similar"
        await pilot.press("e")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        return [n.message for n in app._notifications]

    messages = run_app(script, target="resnet18")
    assert any(m.startswith("wrote ") for m in messages)
    folder = tmp_path / "nar-export"
    graph = json.loads((folder / "resnet18.graph.json").read_text())
    assert graph["nodes"] and graph["edges"]
    dot = (folder / "resnet18.dot").read_text()
    assert dot.startswith("digraph") and dot.count("->") == len(graph["edges"])
    similar = json.loads((folder / "resnet18.similar.json").read_text())
    assert len(similar["neighbours"]) == 10
    assert (folder / "resnet18.similar.csv").read_text().splitlines()[0].startswith("rank,name")


def test_help_lists_the_keys():
    from narcli.tui.screens import HelpScreen

    async def script(app, pilot):
        app.query_one("#models").focus()
        await pilot.press("question_mark")
        await pilot.pause()
        shown = type(app.screen)
        await pilot.press("escape")
        await pilot.pause()
        return shown, type(app.screen)

    shown, after = run_app(script)
    assert shown is HelpScreen and after is not HelpScreen


def test_browsing_imports_no_torch():
    code = """
import asyncio, sys
from narcli.tui.app import NarApp
async def main():
    app = NarApp("resnet50", blink=False)
    async with app.run_test(size=(120, 34)) as pilot:
        await pilot.pause(0.5)
        await app.workers.wait_for_complete()
        app.query_one("#models").focus()
        await pilot.press("3")
        await pilot.pause()
        assert app.similar_result is not None
asyncio.run(main())
assert "torch" not in sys.modules, "torch was imported"
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy())
    assert done.returncode == 0, done.stderr[-2000:]
