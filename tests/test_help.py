"""Every command's `--help`: it renders, it shows bracketed literals such as `[tool.nar]` as written
(Rich reads unescaped brackets as markup and drops them), and each shared option is defined once."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import typer.main
from typer.testing import CliRunner

from narcli.cli.app import app
from narcli.cli.options import EXPLAINED_REUSE

CLI = Path(__file__).resolve().parent.parent / "narcli" / "cli"
PACKAGE = CLI.parent
LITERAL = re.compile(r"\\?\[([a-z][\w.\-\"*]*)\]")  # [tool.nar], \[tool.nar.files."GLOB"]


def command_paths(command=None, prefix=()):
    command = command or typer.main.get_command(app)
    commands = getattr(command, "commands", None)
    if not commands:
        yield prefix, command
        return
    for name, sub in commands.items():
        yield from command_paths(sub, (*prefix, name))


def written_help(command) -> list[str]:
    texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
    return [text for text in texts if text]


def test_every_command_has_a_help_that_shows_its_literals():
    runner = CliRunner()
    paths = list(command_paths())
    assert len(paths) > 30  # every command and subcommand is visited
    for path, command in paths:
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "400"}, terminal_width=400)
        assert result.exit_code == 0, (path, result.output)
        shown = " ".join(result.output.replace("│", " ").split())
        for text in written_help(command):
            for literal in LITERAL.findall(text):
                assert f"[{literal}]" in shown, f"nar {' '.join(path)} --help loses [{literal}]"


def test_the_literal_check_catches_an_unescaped_bracket():
    import typer

    probe = typer.Typer()

    @probe.command()
    def checked(paths: list[str] = typer.Argument(None, help="Files (default: [tool.nar] check-paths).")) -> None:
        """A probe."""

    shown = CliRunner().invoke(probe, ["--help"], terminal_width=400).output
    assert "[tool.nar]" not in shown  # what the real commands escape


def declared_flags() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(CLI.glob("*.py")):
        if path.name == "options.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("Option", "Argument"):
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("--"):
                        found.setdefault(arg.value, []).append(f"{path.name}:{node.lineno}")
    return found


def test_each_shared_option_is_defined_once_in_options_py():
    repeated = {flag: where for flag, where in declared_flags().items()
                if len(where) > 1 and flag not in EXPLAINED_REUSE}
    assert repeated == {}, "define these in narcli/cli/options.py and use the alias"


def test_the_prefixes_of_a_target_are_written_only_in_the_resolver():
    pattern = re.compile(r"[\"'](cache|zoo):")
    offenders = [f"{path.relative_to(PACKAGE.parent)}:{number}"
                 for path in sorted(PACKAGE.rglob("*.py")) if path.name != "targets.py" or path.parent.name != "scan"
                 for number, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert offenders == []


def test_the_progress_reporter_is_written_once():
    sources = {path.name: path.read_text() for path in CLI.glob("*.py")}
    written = [name for name, text in sources.items() if 'console.print(f"[dim]{safe(line)}[/]")' in text]
    assert written == ["options.py"]
