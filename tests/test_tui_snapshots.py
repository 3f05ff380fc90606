"""Snapshots of `nar tui` at 120x34 (pytest-textual-snapshot; SVGs under tests/__snapshots__/): the
main screen, each detail tab, compare, help and an error notification. Cursor blink off; no clock or
version text in any frame. `pytest --snapshot-update` rewrites them after a deliberate change."""

import pytest

pytest.importorskip("pytest_textual_snapshot")

from narcli.tui.app import NarApp  # noqa: E402

SIZE = (120, 34)


async def opened(pilot, tab=None):
    """Wait for the details of the model given on the command line, then show `tab`."""
    app = pilot.app
    await pilot.pause(0.2)
    await app.workers.wait_for_complete()
    app.query_one("#models").focus()
    if tab:
        app.query_one("#detail").active = tab
    await pilot.pause(0.2)


def test_main_screen(snap_compare):
    assert snap_compare(NarApp(blink=False), terminal_size=SIZE)


def test_main_screen_at_80_by_24(snap_compare):
    assert snap_compare(NarApp(blink=False), terminal_size=(80, 24))


def test_search_results(snap_compare):
    async def type_query(pilot):
        await pilot.press(*"efficientnet_b")
        await pilot.pause(0.3)

    assert snap_compare(NarApp(blink=False), terminal_size=SIZE, run_before=type_query)


@pytest.mark.parametrize("tab", ["summary", "structure", "similar", "predictions"])
def test_detail_tabs(snap_compare, tab):
    async def show(pilot):
        await opened(pilot, tab)

    assert snap_compare(NarApp("resnet50", blink=False), terminal_size=SIZE, run_before=show)


def test_compare(snap_compare):
    async def compare(pilot):
        app = pilot.app
        await opened(pilot)
        table = app.query_one("#models")
        for key in ("timm/resnet50", "timm/resnet18"):
            table.move_cursor(row=app.shown.index(key))
            await pilot.press("space")
        await pilot.press("c")
        await pilot.pause(0.2)
        await app.workers.wait_for_complete()
        await pilot.pause(0.2)

    assert snap_compare(NarApp(blink=False), terminal_size=SIZE, run_before=compare)


def test_help(snap_compare):
    async def help_screen(pilot):
        pilot.app.query_one("#models").focus()
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(NarApp(blink=False), terminal_size=SIZE, run_before=help_screen)


def test_error_notification(snap_compare):
    async def scan_missing(pilot):
        app = pilot.app
        app.query_one("#models").focus()
        await pilot.press("o")
        await pilot.pause()
        app.screen.query_one("#path").value = "no_such_model.py"
        await pilot.press("enter")
        for _ in range(50):
            await pilot.pause(0.1)
            await app.workers.wait_for_complete()
            if any(n.severity == "error" for n in app._notifications):
                break
        for notification in list(app._notifications):  # only the error: "scanning ..." is a progress note
            if notification.severity != "error":
                app._unnotify(notification)
        await pilot.pause(0.2)

    assert snap_compare(NarApp(blink=False), terminal_size=SIZE, run_before=scan_missing)


@pytest.mark.parametrize("tab", ["similar", "predictions"])
def test_detail_tabs_at_80_by_24(snap_compare, tab):
    """The tab bar, the Similar table's cosine and every footer key fit at 80×24 (issue 43)."""
    async def show(pilot):
        await opened(pilot, tab)

    assert snap_compare(NarApp("resnet50", blink=False), terminal_size=(80, 24), run_before=show)
