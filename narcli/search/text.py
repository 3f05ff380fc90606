"""Short texts shared by the command line and the browser: counts with SI suffixes, and the family
line ("family resnet (92%), coarse class convolutional ...")."""

from __future__ import annotations

from typing import Any


def human(n: float, unit: str = "", billions: str = "G") -> str:
    """1234567 -> '1.23 M'; beyond the largest suffix, plain scientific notation ('2.16e+26')."""
    if abs(n) >= 1e21:
        return f"{n:.3g} {unit}".strip()
    for size, suffix in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, billions), (1e6, "M"), (1e3, "k")):
        if abs(n) >= size:
            return f"{n / size:.3g} {suffix}{unit}"
    return f"{n:g} {unit}".strip()


def human_params(n: float) -> str:
    """A parameter count: billions read B, as model cards say them (6.72 B); MACs keep G."""
    return human(n, billions="B")


def prediction_line(prediction: Any) -> str:
    """The family prediction as one line of Rich markup."""
    p = prediction
    coarse = f"{p.coarse} ({p.coarse_confidence:.0%})" if p.coarse else "unknown"
    if p.novel:
        # what the far neighbours vote for: a distant rewrite of that family reads the same way as
        # a new design, and the user can tell them apart where the search cannot
        leaning = f"; the far neighbours lean to {p.alternatives[0][0]} ({p.alternatives[0][1]:.0%})" \
            if p.alternatives and p.nearest_cosine > -1 else ""  # no neighbours: the head alone, no "lean"
        return (f"[bold yellow]no close family[/]: the nearest known architecture is at cosine "
                f"{p.nearest_cosine:.3f}, below {p.threshold:.3f}{leaning}; coarse class {coarse}")
    others = ", ".join(f"{f} {c:.0%}" for f, c in p.alternatives[:2])
    tail = f" [dim](then {others})[/]" if others else ""
    design = f"; design [bold]{p.design}[/] ({p.design_confidence:.0%})" if p.design else ""
    backbone = f" over {p.backbone}" if getattr(p, "backbone", "") else ""
    return f"family [bold]{p.family}[/]{backbone} ({p.family_confidence:.0%}){design}, coarse class {coarse}{tail}"
