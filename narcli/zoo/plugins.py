"""Load plugins from entry points and collect the zoo sources they provide."""

from __future__ import annotations

import difflib
import os
from typing import Any

import pluggy

from narcli import hookspecs
from narcli.errors import UsageError, shorten
from narcli.zoo.sources import ZooSource

_manager: pluggy.PluginManager | None = None
_broken: dict[str, str] = {}  # plugin name -> why it could not be loaded or asked, in one line


def _why(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {shorten(text, 160)}" if text else type(exc).__name__


def plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager; entry points load on first use (not with NAR_NO_PLUGINS=1),
    one by one: a plugin that fails to import or register is recorded as broken (`nar plugins`
    names it) and the others load."""
    global _manager
    if _manager is None:
        manager = pluggy.PluginManager("nar")
        manager.add_hookspecs(hookspecs)
        if os.environ.get("NAR_NO_PLUGINS", "") not in ("1", "true"):
            from importlib.metadata import entry_points

            for name in sorted({ep.name for ep in entry_points(group="nar")}):
                try:
                    manager.load_setuptools_entrypoints("nar", name=name)
                except Exception as exc:  # noqa: BLE001 - third-party code: any failure is its own
                    _broken[name] = _why(exc)
        _manager = manager
    return _manager


def broken_plugins() -> dict[str, str]:
    """Plugins that could not be loaded or answered with an error, each with why."""
    plugin_manager()
    return dict(_broken)


def register(plugin: Any, name: str | None = None) -> None:
    """Register a plugin object or module by hand (tests, notebooks, embedding nar)."""
    plugin_manager().register(plugin, name=name)


def unregister(name: str) -> None:
    plugin_manager().unregister(name=name)


def zoo_sources() -> dict[str, ZooSource]:
    """Every registered zoo source by name, in rank order."""
    found: dict[str, ZooSource] = {}
    for impl in reversed(plugin_manager().hook.nar_zoo_sources.get_hookimpls()):  # pluggy's call order
        try:  # one at a time: a plugin whose hook fails is named, not the end of every command
            batch = [(source.name, source) for source in impl.function() or []]
        except Exception as exc:  # noqa: BLE001 - third-party code
            _broken[impl.plugin_name] = _why(exc)
            continue
        for name, source in batch:
            found.setdefault(name, source)
    return dict(sorted(found.items(), key=lambda item: (item[1].rank, item[0])))


def get_sources(names: list[str] | None, *, bundled_only: bool = False) -> list[ZooSource]:
    """The named sources (all bundled ones when `names` is empty); UsageError for unknown names."""
    sources = zoo_sources()
    if not names:
        chosen = [s for s in sources.values() if s.bundled or not bundled_only]
        if not chosen:
            raise UsageError("no zoo sources are installed; install one, e.g. `pip install ./plugins/nar-timm`")
        return chosen
    chosen = []
    for name in names:
        if name not in sources:
            close = difflib.get_close_matches(name, list(sources), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            known = ", ".join(sources) or "none installed"
            broken = "".join(f"; plugin {p} is broken ({why})" for p, why in sorted(_broken.items()))
            raise UsageError(f"unknown zoo source {name!r}{hint} (known: {known}){broken}")
        chosen.append(sources[name])
    return chosen


def plugin_list() -> list[dict[str, Any]]:
    """What `nar plugins` shows: each plugin with its version, hooks and sources."""
    manager = plugin_manager()
    dists = {id(plugin): dist for plugin, dist in manager.list_plugin_distinfo()}
    out = []
    for name, plugin in manager.list_name_plugin():
        if plugin is hookspecs:
            continue
        dist = dists.get(id(plugin))
        hooks = sorted(h.name for h in manager.get_hookcallers(plugin) or [])
        sources, error = [], _broken.get(name)
        if "nar_zoo_sources" in hooks:
            try:  # a plugin's own code: its failure is its row, the other plugins are still listed
                for source in plugin.nar_zoo_sources() or []:
                    sources.append({"name": str(source.name), "description": str(source.description),
                                    "missing": source.missing()})
            except Exception as exc:  # noqa: BLE001
                error = _broken[name] = _why(exc)
        out.append({"name": name, "package": dist.project_name if dist else "",
                    "version": dist.version if dist else "", "hooks": hooks, "sources": sources, "error": error})
    listed = {p["name"] for p in out}
    out += [{"name": name, "package": "", "version": "", "hooks": [], "sources": [], "error": why}
            for name, why in _broken.items() if name not in listed]  # failed to import or register
    return sorted(out, key=lambda p: p["name"])


# The first-party plugins (folders under plugins/ of a nar checkout) and the zoo sources each serves:
# what `nar plugins` lists when they are not installed, and what an error names to install.
FIRST_PARTY = {"timm": "nar-timm", "torchvision": "nar-torchvision", "transformers": "nar-transformers",
               "nasbench201": "nar-nas", "darts": "nar-nas", "classics": "nar-classics", "pyg": "nar-pyg", "diffusers": "nar-diffusers",
               "smp": "nar-smp", "monai": "nar-monai", "torchaudio": "nar-torchaudio"}


def _plugin(source: str) -> tuple[str, Any]:
    """(package, its folder in this nar's checkout) of the plugin serving `source`."""
    from pathlib import Path

    package = FIRST_PARTY.get(source, f"nar-{source}")
    return package, Path(__file__).resolve().parents[2] / "plugins" / package


def install_line(source: str) -> str:
    """The one command that installs the plugin serving `source` and keeps the installed torch: the
    plugin's folder when this nar runs from a checkout (else `./plugins/PACKAGE`, for a clone), with
    torch pinned to the installed version, so pip resolves torchvision/timm/transformers against it
    instead of replacing it with another build (several GB of CUDA packages on a CPU machine)."""
    from narcli.zoo.sources import module_version

    package, folder = _plugin(source)
    torch = module_version("torch").split("+")[0]  # `==2.13.0` matches the installed 2.13.0+cpu, and is findable
    pin = f" torch=={torch}" if torch else ""
    if folder.is_dir():  # nar runs from a checkout: its own plugin folder
        return f"pip install {folder}{pin}"
    # installed from a wheel: the plugins ship in nar's source tree, not on the package index
    return f"pip install ./plugins/{package}{pin}"


def _where(source: str) -> str:
    """Where the install line runs: anywhere from a checkout, else in a clone of nar's repository."""
    return "" if _plugin(source)[1].is_dir() else ", run in a clone of nar's repository"


def missing_source_message(name: str, source: str) -> str:
    return (f"{name}: the {source!r} zoo source is not installed (it comes as the plugin "
            f"{_plugin(source)[0]}); install it with `{install_line(source)}`{_where(source)}")


def uninstalled_plugins() -> list[dict[str, Any]]:
    """The first-party plugins not installed here, each with its sources and install line."""
    installed = set(zoo_sources())
    out: dict[str, dict[str, Any]] = {}
    for source, package in FIRST_PARTY.items():
        if source not in installed:
            entry = out.setdefault(package, {"name": package, "package": package, "installed": False,
                                             "sources": [], "install": install_line(source) + _where(source)})
            entry["sources"].append(source)
    return list(out.values())