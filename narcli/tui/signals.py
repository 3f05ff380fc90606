"""How the browser ends when told to from outside: SIGTERM closes the app through its own event loop
(workers stopped, terminal restored) rather than as an exception raised wherever the main thread
happens to be (which printed `internal error: RuntimeError: no running event loop`)."""

from __future__ import annotations

from typing import Any


def close_on_sigterm(app: Any) -> None:
    """From inside the running app: on SIGTERM set `app.terminated` and exit the app."""
    import asyncio
    import signal

    def terminate() -> None:
        app.terminated = True
        app.exit()

    try:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, terminate)
    except (NotImplementedError, RuntimeError, ValueError):  # Windows, or not the main thread
        pass
