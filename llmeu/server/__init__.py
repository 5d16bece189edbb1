"""Serving the ASGI app over HTTP: uvicorn, configured and supervised for the gateway.

The CLI builds `Settings` and calls `run(settings)`; nothing here knows a
route or a call.
"""

from llmeu.server.runner import run

__all__ = ["run"]
