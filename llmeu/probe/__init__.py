"""`llmeu probe`: qualify an OpenAI-compatible upstream's stream before it enters the catalog.

A short, bounded series of real calls (`plan.py`; `responses_plan.py` for the
Responses API, `messages_plan.py` for Anthropic's Messages API), each recorded
read by read (`exchange.py`), judged check by check against what llmeu's own
decoder, assembler and contract rely on (`chat_checks.py`,
`responses_checks.py`, `messages_checks.py`; what they judge alike in
`checks.py`), and reported as a table or JSON with the evidence of
every failure and a suggested catalog entry. It is a client: it imports only
the protocol and the client.
"""
