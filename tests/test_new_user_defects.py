"""Defects a new user met (issue 31), each pinned by a test that failed before its fix."""

import subprocess
import sys

from .conftest import mlp_source


# 6: a "no" on a pipe is not consent
def test_cache_clear_without_a_terminal_needs_yes(write, nar_home):
    env = {**__import__("os").environ, "NAR_HOME": str(nar_home)}
    model = write("tiny.py", mlp_source(4, 8, 2))
    subprocess.run([sys.executable, "-m", "narcli", "scan", str(model)], env=env, check=True, capture_output=True)
    refused = subprocess.run([sys.executable, "-m", "narcli", "cache", "clear"], input="n\n", env=env,
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "pass -y" in refused.stderr, refused.stderr
    info = subprocess.run([sys.executable, "-m", "narcli", "cache", "info", "--json"], env=env, capture_output=True,
                          text=True, check=True)
    assert '"scans": 1' in info.stdout  # nothing was deleted


# 7: two model.py files in different folders are told apart in check's text output
def test_check_names_files_by_their_path(cli, write, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write("a/model.py", mlp_source(4, 8, 2))
    write("b/model.py", mlp_source(5, 9, 2))
    output = cli("check", "a/model.py", "b/model.py").output
    assert "ok a/model.py" in output and "ok b/model.py" in output, output


# 8: DOT labels are readable text
def test_dot_export_labels_are_plain_utf8():
    from narcli.graph.synthetic import residual_stack
    from narcli.tui.data import graph_dot

    dot = graph_dot(residual_stack(2), 'my "net" \\ v2')
    assert 'label="input\\n1×3×224×224"' in dot and "u00d7" not in dot
    assert dot.startswith('digraph "my \\"net\\" \\\\ v2" {')


# 1: the nanoGPT file shape: a config dataclass passed to the model and to its inner blocks
NANO_GPT = """import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class GPTConfig:
    block_size: int = 64
    vocab_size: int = 100
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32
    dropout: float = 0.0
    bias: bool = True


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.n_head = config.n_head
        self.n_embd = config.n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd)))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))
"""


def test_a_nanogpt_shaped_file_scans_with_no_options(cli, write):
    import json

    path = write("model.py", NANO_GPT)
    result = cli("scan", path, "--json")
    assert result.exit_code == 0, result.output
    assert [m["name"] for m in json.loads(result.stdout)["models"]] == ["GPT(GPTConfig())"]
    named = cli("scan", path, "--model", "GPT", "--json")  # the bare class name fills in the config too
    assert named.exit_code == 0, named.output
    assert json.loads(named.stdout)["models"][0]["name"] == "GPT(GPTConfig())"


# 3: two cache records sharing a graph (the same file scanned under two torch versions)
def test_the_tui_starts_when_two_scans_share_a_graph(write):
    import asyncio

    from narcli.scan.cache import Cache
    from narcli.scan.scanner import scan_file
    from narcli.tui.app import NarApp

    records, graphs = scan_file(write("tiny.py", mlp_source(4, 8, 2)), want_graphs=True)
    cache = Cache()
    cache.store("as-if-another-torch", records[0].source, records, graphs)  # a second scan, one graph
    assert len({r.graph_key for r in cache.records()}) == 1 and len(cache.records()) == 2

    async def main():
        app = NarApp(None)
        async with app.run_test(size=(120, 34)) as pilot:
            await pilot.pause()
            return [e for e in app.entries if e.key.startswith("cache:")]

    assert len(asyncio.run(main())) == 1


# 4: search + Enter opens the exact name, then a prefix, then any match
def test_search_and_enter_open_the_exact_name_first():
    import asyncio

    from narcli.tui.app import NarApp

    async def main():
        opened = {}
        app = NarApp(None)
        async with app.run_test(size=(120, 34)) as pilot:
            await pilot.pause()
            for query in ("resnet50", "bert", "vit_base_patch16_224", "convnext_ti"):
                search = app.query_one("#search")
                search.focus()
                search.value = query
                await pilot.press("enter")
                await pilot.pause(0.3)
                opened[query] = app.by_key[app.current].name
        return opened

    opened = asyncio.run(main())
    assert opened["resnet50"] == "resnet50" and opened["bert"] == "bert"
    assert opened["vit_base_patch16_224"] == "vit_base_patch16_224"
    assert opened["convnext_ti"].startswith("convnext_ti")  # no exact name: a prefix before a substring


def test_relevance_orders_exact_then_prefix_then_substring():
    from narcli.tui.data import Entry, relevance

    def entry(key, name):
        return Entry(key, name, "", "", "", "", 0, 0, 0, key)

    assert relevance(entry("timm/resnet50", "resnet50"), "resnet50") == 0
    assert relevance(entry("timm/resnet50d", "resnet50d"), "resnet50") == 1
    assert relevance(entry("timm/cspresnet50", "cspresnet50"), "resnet50") == 2


# 15: nar's output stays clean whatever its dependencies (or the model's imports) warn
def test_library_warnings_do_not_reach_the_output(write):
    model = write("noisy.py", "import warnings\nwarnings.warn('jit.script is deprecated', FutureWarning)\n"
                  + mlp_source(4, 8, 2))
    result = subprocess.run([sys.executable, "-W", "default", "-m", "narcli", "scan", str(model)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "FutureWarning" not in result.stderr and "deprecated" not in result.stderr, result.stderr
    debug = subprocess.run([sys.executable, "-m", "narcli", "--debug", "scan", str(model), "--no-cache"],
                           capture_output=True, text=True)
    assert "FutureWarning" in debug.stderr  # --debug shows everything


# 12: a missing plugin is named, with the one command that installs it and keeps the installed torch
def test_a_missing_zoo_source_names_its_plugin_and_a_torch_keeping_install(cli, monkeypatch):
    import json

    from narcli.zoo import plugins
    from narcli.zoo.sources import module_version

    monkeypatch.setattr(plugins, "zoo_sources", lambda: {})  # as on a machine with no plugins
    torch = module_version("torch").split("+")[0]
    line = plugins.missing_source_message("hf/bert", "transformers")
    assert "plugin nar-transformers" in line and f"plugins/nar-transformers torch=={torch}`" in line
    listed = {p["name"]: p for p in json.loads(cli("plugins", "--json").stdout)}
    assert listed["nar-timm"]["installed"] is False and listed["nar-timm"]["sources"] == ["timm"]
    assert f"plugins/nar-timm torch=={torch}" in listed["nar-timm"]["install"]
    assert "not installed nar-timm (timm): pip install" in cli("plugins").output.replace("\n", " ")


# 9: a cached neighbour's family is the one the same graph gets as a query, with no unexplained "(x?)"
def test_a_cached_neighbour_has_the_family_it_gets_as_a_query(cli, write, tmp_path):
    import json
    from pathlib import Path

    models = Path(__file__).with_name("models.py").read_text()
    first = write("mine/my_resnet.py", models)
    second = tmp_path / "theirs" / "their_resnet.py"
    second.parent.mkdir()
    second.write_text(models + "\n# my own copy\n")  # other bytes (its own cache entry), the same graph
    alone = json.loads(cli("similar", first, "--model", "SmallResNet", "-k", "3", "--json").stdout)
    expected = alone["results"][0]["prediction"]["family"] or "new"
    result = json.loads(cli("similar", second, "--model", "SmallResNet", "-k", "3", "--json").stdout)
    [cached] = [n for n in result["results"][0]["neighbours"] if n["source"] == "cache"]
    assert cached["cosine"] > 0.999 and cached["family"] == expected
    assert "?" not in cached["family"]


# 5: every cached model has a unique name, shown by `nar cache list`; full paths name models too
def test_cached_models_have_unique_names(cli, write, tmp_path, monkeypatch):
    import json

    path = write("small_cnn.py", mlp_source(4, 8, 2))
    for shape in ("1,4", "2,4"):
        assert cli("scan", path, "-i", shape).exit_code == 0
    listed = json.loads(cli("cache", "list", "--json").stdout)
    names = [m["cache_name"] for m in listed]
    assert len(names) == 2 and len(set(names)) == 2
    assert names[0] in cli("cache", "list").output
    ambiguous = cli("similar", "cache:Net")
    assert ambiguous.exit_code == 2 and names[0] in ambiguous.stderr and "float32[2,4]" in ambiguous.stderr
    for name in names:
        result = cli("similar", name, "-k", "3", "--json")
        assert result.exit_code == 0, result.output
        neighbours = json.loads(result.stdout)["results"][0]["neighbours"]
        cached = [n["name"] for n in neighbours if n["source"] == "cache"]
        assert len(cached) == len(set(cached))  # the other scan of the same file: not twice
    by_path = cli("similar", f"cache:{path}", "-k", "1")
    assert "ambiguous" in by_path.stderr  # a full path names the file (here two scans of it)
    write("other.py", mlp_source(5, 8, 2))
    cli("scan", tmp_path / "other.py")
    assert cli("similar", f"cache:{tmp_path / 'other.py'}", "-k", "1").exit_code == 0


# 11: the keyboard reaches the Similar rows: `3`, then ↓ and Enter walk the neighbours
def test_the_keyboard_walks_the_similar_rows():
    import asyncio

    from narcli.tui.app import NarApp

    async def main():
        app = NarApp("resnet50")
        async with app.run_test(size=(120, 34)) as pilot:
            for _ in range(40):
                await pilot.pause(0.25)
                if app.similar_result is not None:
                    break
            second = app.similar_result.neighbours[1].name
            app.query_one("#models").focus()
            await pilot.press("3", "down", "enter")
            for _ in range(20):
                await pilot.pause(0.25)
                if app.current != "timm/resnet50":
                    break
            return second, app.current, app.focused.id

    second, current, focused = asyncio.run(main())
    assert current == second and focused == "similar-table"


# 11: at 80x24 the table shows name and family, names that differ still read apart, and the
# status bar shows both marked models in full; a wider terminal gets the wide layout back
def test_the_tui_at_80_by_24_shows_name_family_and_what_is_marked():
    import asyncio

    from narcli.tui.app import NarApp
    from narcli.tui.data import fit

    async def main():
        app = NarApp(None)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            table = app.query_one("#models")
            room = table.scrollable_content_region.width
            columns = list(table.columns.values())
            narrow = [c.get_render_width(table) for c in columns]
            for key in ("timm/resnet50", "torchvision/resnet50"):
                app.query_one("#search").value = key
                await pilot.pause(0.2)
                app.query_one("#models").focus()
                await pilot.press("space")
            status = app.query_one("#status")
            text = str(status.render())
            fits = status.region.right <= 80 and status.region.bottom <= 24
            await pilot.resize_terminal(120, 34)
            await pilot.pause(0.3)
            wide = [c.get_render_width(table) for c in table.columns.values()]
            return room, narrow, [str(c.label) for c in columns[:2]], text, fits, status.size.height, \
                wide, table.scrollable_content_region.width

    room, narrow, labels, text, fits, height, wide, wide_room = asyncio.run(main())
    assert labels == ["name", "family"] and sum(narrow[:2]) <= room, (narrow, room)
    assert "marked: timm/resnet50, torchvision/resnet50" in text and fits and height == 2, text
    assert wide[0] > narrow[0] and sum(wide[:2]) <= wide_room  # full-width names again at 120 columns
    assert fit("timm/aimv2_large_patch14_448", 25) != fit("timm/aimv2_huge_patch14_448", 25)
    assert len(fit("timm/aimv2_large_patch14_448", 25)) == 25 and fit("timm/resnet50", 25) == "timm/resnet50"


# 13: the README's pre-commit snippet works as written (no tag that does not exist) and is the shipped hook
def test_the_readme_pre_commit_snippet_is_the_shipped_hook():
    import re
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    [block] = [b for b in re.findall(r"```yaml\n(.*?)```", readme, re.S) if "pre-commit-config" in b]
    [repo] = yaml.safe_load(block)["repos"]
    assert repo["repo"] == "local" and "rev" not in repo
    [hook] = repo["hooks"]
    [shipped] = yaml.safe_load((root / ".pre-commit-hooks.yaml").read_text())
    for key in ("id", "entry", "files", "types_or", "require_serial"):
        assert hook[key] == shipped[key], key


# 10: motifs that list the same operations on both sides are paired, with what differs (issue 43:
# compared by their layers in order, not marked as a look-alike)
def test_compare_explains_motifs_that_look_alike():
    import io
    from types import SimpleNamespace

    from narcli.cli.common import console
    from narcli.cli.render_search import print_comparison

    side = SimpleNamespace(name="a", params=1, macs=1, depth=1, nodes=1)
    from narcli.search.compare import pair_motifs

    only_a = [{"type": "1", "ops": {"conv2d": 2, "relu": 2}, "count": 3, "layers": ["conv2d", "conv2d", "relu", "relu"]}]
    only_b = [{"type": "2", "ops": {"conv2d": 2, "relu": 2}, "count": 4, "layers": ["conv2d", "relu", "conv2d", "relu"]},
              {"type": "3", "ops": {"add": 1}, "count": 1, "layers": ["add"]}]
    paired = pair_motifs(only_a, only_b, "a", "b")
    c = SimpleNamespace(a=side, b=SimpleNamespace(**{**side.__dict__, "name": "b"}), op_difference=[], cosine=0.9,
                        same_architecture=False, motifs_shared=[], motifs_paired=paired, motifs_only_a=[],
                        motifs_only_b=[only_b[1]])
    out = io.StringIO()
    print_comparison(console(file=out, width=200), c)
    text = out.getvalue()
    assert "conv2d×2 relu×2 ×3 ~ conv2d×2 relu×2 ×4: the same layers in another order" in text
    assert "only in b: add ×1" in text


# 14: did-you-mean for zoo list filters; no design confidence without a design
def test_zoo_list_suggests_close_filter_values(cli):
    result = cli("zoo", "list", "-t", "image-clasification")
    assert result.exit_code == 1 and "did you mean image-classification" in result.stderr


def test_no_design_means_no_design_confidence():
    from narcli.search.family import predict_family

    novel = predict_family(None, [("resnet", "convolutional", 0.1)], threshold=0.7).to_json()
    assert novel["design"] is None and novel["design_confidence"] is None


# 14: `performance` in `--json` is fields (value, interval, unit, device), not a sentence
def test_performance_in_json_is_structured(cli, write):
    import json

    result = cli("similar", "resnet50", "-k", "1", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["results"][0]["performance"]
    assert [r["kind"] for r in rows] == ["accuracy", "latency", "throughput"]
    for row in rows:
        assert isinstance(row["value"], float) and row["low"] <= row["value"] <= row["high"], row
        assert row["unit"] and row["what"]
    assert rows[0]["unit"] == "%" and rows[1]["device"] and rows[1]["unit"] == "ms"
    text = cli("similar", "resnet50", "-k", "1")
    assert f"top-1 {rows[0]['value']:.1f} %" in text.stdout  # the text line reads the same rows
    scanned = cli("scan", write("tiny.py", mlp_source(4, 8, 2)), "--json")
    assert json.loads(scanned.stdout)["models"][0]["performance"] == []  # none applies to an MLP


# 14: a graph export from the command line, as the browser's `e` writes it
def test_nar_export_writes_json_and_dot(cli, write, tmp_path):
    import json

    out = tmp_path / "out"
    result = cli("export", "resnet18", "-o", out, "--json")
    assert result.exit_code == 0, result.output
    written = [p.split("/")[-1] for p in json.loads(result.stdout)]
    assert written == ["timm_resnet18.graph.json", "timm_resnet18.dot"]
    assert json.loads((out / "timm_resnet18.graph.json").read_text())["nodes"]
    assert (out / "timm_resnet18.dot").read_text().startswith('digraph "timm/resnet18" {')
    model = write("tiny.py", mlp_source(4, 8, 2))
    assert cli("export", model, "-o", out).exit_code == 0 and (out / "tiny.dot").exists()
    assert cli("export", "no-such-model", "-o", out).exit_code == 1


# 14: the TUI's scan dialog takes an input dtype (token ids for a language model)
def test_the_tui_scan_dialog_takes_an_input_dtype(write):
    import asyncio

    from narcli.tui.app import NarApp

    model = write("tiny_lm.py", "from torch import nn\n\n\nclass TinyLM(nn.Module):\n    def __init__(self):\n"
                  "        super().__init__()\n        self.emb = nn.Embedding(50, 8)\n        self.out = nn.Linear(8, 50)\n\n"
                  "    def forward(self, ids):\n        return self.out(self.emb(ids))\n")

    async def main():
        app = NarApp(None)
        async with app.run_test(size=(120, 34)) as pilot:
            await pilot.pause()
            app.query_one("#models").focus()
            await pilot.press("o")
            await pilot.pause()
            app.screen.query_one("#path").value = str(model)
            app.screen.query_one("#shape").value = "1,16"
            app.screen.query_one("#dtype").value = "long"
            await pilot.press("enter")
            for _ in range(120):
                await pilot.pause(0.5)
                if app.current and app.current.startswith("cache:"):
                    break
            return app.by_key.get(app.current)

    entry = asyncio.run(main())
    assert entry is not None and entry.record.inputs[0]["dtype"] == "int64"
