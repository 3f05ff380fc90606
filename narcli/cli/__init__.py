"""The command line: the Typer app split by command group, each group's rich renderers
beside it. Commands parse arguments, call one library function and render what it returns; they hold
no logic of their own. May import every stage, lazily inside each command (only typer, rich and the
error types at module level), so `nar --help` and zoo-name queries never import torch.
"""


def main() -> None:
    """The `nar` console script."""
    from narcli.cli.app import main as run_app

    run_app()
