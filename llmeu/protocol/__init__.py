"""The wire: request and response shapes, error bodies, SSE encode and decode. Pure."""
