"""The bundled encoder weights: safetensors (no pickle) plus a JSON model card with a version."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from narcli import DATA_DIR
from narcli.errors import NarError
from narcli.fsutil import write_bytes, write_text

ENCODER_VERSION = 4  # bump when the encoder's inputs or layers change; old weights are refused


class WeightsError(NarError):
    """Weights missing, or made for another encoder version."""


def bundled_weights_path() -> Path:
    return DATA_DIR / "encoder.safetensors"


def encoder_id(weights: Path) -> str:
    """Names the weights, and the model card settings that shape vectors, that made an embedding,
    so a changed encoder is noticed (the card's read-out settings change the vectors of unchanged
    weights; its metrics and log do not)."""
    from narcli.encode.features import FEATURES_VERSION

    weights = Path(weights)
    digest = hashlib.sha256(weights.read_bytes())
    digest.update(f"features {FEATURES_VERSION}".encode())  # what the encoder reads changed too
    card = weights.with_suffix(".json")
    if card.exists():
        fields = json.loads(card.read_text())
        shaping = {k: fields.get(k) for k in ("encoder_version", "families", "config")}
        digest.update(json.dumps(shaping, sort_keys=True).encode())
    return digest.hexdigest()[:16]


def save_weights(trained: Any, path: Path, card: dict) -> None:
    """Write `trained.model`'s tensors and the card (families, config, metrics) beside them."""
    from safetensors.torch import save

    state = {k: v.detach().cpu().contiguous() for k, v in trained.model.state_dict().items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(path, save(state, metadata={"encoder_version": str(ENCODER_VERSION)}))
    card = {"encoder_version": ENCODER_VERSION, "families": trained.families,
            "config": asdict(trained.config), **card}
    write_text(path.with_suffix(".json"), json.dumps(card, indent=1) + "\n")


def load_encoder(path: Path | None = None) -> tuple[Any, dict]:
    """(model, card) from weights written by `save_weights`; a clear error when unusable."""
    path = Path(path or bundled_weights_path())
    card_path = path.with_suffix(".json")
    if not path.exists() or not card_path.exists():
        raise WeightsError(f"encoder weights not found at {path}; train them with `nar train encoder` "
                           "or reinstall nar")
    card = json.loads(card_path.read_text())
    if card.get("encoder_version") != ENCODER_VERSION:
        raise WeightsError(f"{path} holds encoder version {card.get('encoder_version')}, this nar needs "
                           f"version {ENCODER_VERSION}; retrain with `nar train encoder` or reinstall nar")
    from safetensors.torch import load_file

    from narcli.encode.training import model_for

    try:
        model = model_for({**card["config"], "device": "cpu"}, len(card["families"]))
    except ValueError as exc:  # a setting this nar does not know
        raise WeightsError(f"cannot build the encoder of {card_path}: {exc}") from None
    try:
        model.load_state_dict(load_file(str(path)))
    except Exception as exc:  # a truncated or foreign file
        raise WeightsError(f"cannot read encoder weights {path}: {exc}") from None
    model.eval()
    return model, card
