"""The ASGI application: routes, authentication, the call lifecycle, the platform API."""
