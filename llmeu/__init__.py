"""llmeu: an OpenAI-compatible LLM gateway that keeps inference inside the EU."""

__version__ = "0.1.0"
