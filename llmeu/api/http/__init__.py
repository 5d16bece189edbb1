"""HTTP plumbing of the ASGI app: requests and responses, bodies, CORS, error bodies.

Nothing here knows what a call, a key or a policy is.
"""
