"""`nar tui` speed (issue 20): first paint with the full zoo (a fresh interpreter, headless, 120x34,
from process start until Textual's Ready event; median of 5) beside `python -c "import textual"`,
whether torch was imported, and search keystrokes (time from a key press until the table holds
the new rows, debounce included; median over 18 keystrokes, typed one at a time).

    python benchmarks/bench_tui.py

Targets: first paint <= 1.0 s without torch; a keystroke <= 100 ms. Writes
benchmarks/results/tui.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import machine

ROOT = Path(__file__).resolve().parent.parent
PAINT = """
import time, sys
from narcli.tui.app import NarApp

class Probe(NarApp):
    def on_ready(self):
        print("ready", time.time(), len(self.shown), flush=True)
        self.exit()

Probe(blink=False).run(headless=True, size=(120, 34))
print("torch", "torch" in sys.modules)
"""


def first_paint(env: dict[str, str]) -> tuple[float, bool, int]:
    began = time.time()
    done = subprocess.run([sys.executable, "-c", PAINT], env=env, capture_output=True, text=True, check=True)
    fields = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    ready, rows = fields["ready"].split()
    return float(ready) - began, fields["torch"] == "True", int(rows)


def import_textual(env: dict[str, str]) -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import textual.app"], env=env, check=True)
    return time.perf_counter() - began


async def keystrokes() -> list[float]:
    from narcli.tui.app import NarApp

    app = NarApp(blink=False)
    times = []
    refreshed = []
    original = app.refresh_table

    def counted() -> None:  # the table holds the new rows when refresh_table returns
        original()
        refreshed.append(time.perf_counter())

    app.refresh_table = counted
    async with app.run_test(size=(120, 34)) as pilot:
        await pilot.pause()
        for word in ("resnet", "vit_base", "bert"):
            for char in word:
                count = len(refreshed)
                began = time.perf_counter()
                await pilot.press(char)
                while len(refreshed) == count and time.perf_counter() - began < 2:
                    await asyncio.sleep(0.002)
                times.append(refreshed[-1] - began if len(refreshed) > count else 2.0)
            for _ in word:
                await pilot.press("backspace")
            await pilot.pause(0.2)
    return times


def main() -> None:
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "NAR_HOME": home}
        paints = [first_paint(env) for _ in range(5)]
        textual_import = statistics.median(import_textual(env) for _ in range(5))
        os.environ["NAR_HOME"] = home
        keys = asyncio.run(keystrokes())
    result = {
        "first_paint_s": round(statistics.median(p[0] for p in paints), 3),
        "first_paint_runs_s": [round(p[0], 3) for p in paints],
        "rows": paints[0][2], "imports_torch": any(p[1] for p in paints),
        "import_textual_s": round(textual_import, 3),
        "keystroke_median_ms": round(statistics.median(keys) * 1000, 1),
        "keystroke_max_ms": round(max(keys) * 1000, 1), "keystrokes": len(keys), "machine": machine(),
    }
    out = ROOT / "benchmarks" / "results" / "tui.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
