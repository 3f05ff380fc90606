"""The hooks a nar plugin can implement (pluggy, project name "nar").

A plugin is a module or package with functions decorated with `narcli.hookimpl`, registered under
the `nar` entry-point group:

    [project.entry-points.nar]
    my_models = "my_package.nar_plugin"
"""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("nar")
hookimpl = pluggy.HookimplMarker("nar")


@hookspec
def nar_zoo_sources() -> list:
    """Return the zoo sources (instances of `narcli.zoo.sources.ZooSource`) this plugin provides."""
