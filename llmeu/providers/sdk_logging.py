"""The cloud SDKs' own loggers, held at WARNING.

botocore logs the headers it signs, urllib3 the requests google-auth makes
for tokens, azure-identity the responses of its token endpoints: at DEBUG,
each would put a credential in the gateway's log. A native provider calls
this when it is built, so `--log-level debug` shows llmeu's detail without
theirs.
"""

from __future__ import annotations

import logging

QUIET_LOGGERS = ("botocore", "urllib3", "google.auth", "azure")


def quiet_sdk_loggers() -> None:
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
