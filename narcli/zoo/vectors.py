"""How a zoo stores embedding vectors."""

from __future__ import annotations

# Zoo embeddings are stored as float16 behind this mark (half the bytes of the bundled zoo's largest
# table; cosines move by ~1e-4) and handed out as float32; unmarked blobs are float32 (older zoos).
HALF_MARK = b"f16:"


def pack_vector(float32_bytes: bytes) -> bytes:
    """A float32 vector's bytes as stored in a zoo."""
    import numpy as np

    return HALF_MARK + np.frombuffer(float32_bytes, dtype=np.float32).astype(np.float16).tobytes()


def checked_vector(blob: bytes) -> bytes:
    data = unpack_vector(blob)  # ValueError for a length that is no whole number of floats: damage
    if not data or len(data) % 4:
        raise ValueError(f"a vector of {len(blob)} bytes")
    return data


def unpack_vector(blob: bytes) -> bytes:
    """The float32 bytes of a stored vector (either encoding)."""
    if not blob.startswith(HALF_MARK):
        return blob
    import numpy as np

    return np.frombuffer(blob, dtype=np.float16, offset=len(HALF_MARK)).astype(np.float32).tobytes()
