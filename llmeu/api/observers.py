"""The call-lifecycle hooks; the interface lives in `llmeu.observability.hooks`,
below the API, so that the observers implementing it never import the API."""

from llmeu.observability.hooks import CallObserver, Headers, Observers

__all__ = ["CallObserver", "Headers", "Observers"]
