"""The answer cache: answers reused only where the policy allows keeping them.

A cached answer is stored content, so the cache keeps what the effective
policy's `cache:` section allows (`llmeu.routing.cache_rules`) and nothing
else: entries live at most its `ttl`, are partitioned by the policy as
applied and by tenant (`lookups`), are removed with their data subject's
content, their policy's change and the content purge, and never leave the
gateway to be compared (`similarity`, with the bundled embedding model).
Where an entry lives is a `Store` (`stores`): in this process
(`memory_store`) or in Redis, encrypted (`redis_store`, `sealing`).
`answers.AnswerCache` is what a call asks.
"""
