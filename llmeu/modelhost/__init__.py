"""The model host: the bundled local models in a process of their own.

llama.cpp and onnxruntime are native code: a fault in them (a build for
another CPU, a `GGML_ASSERT`, an allocation that fails) ends the process it
happens in. They run here, never in a gateway process, so such a fault ends
the calls on the local models and nothing else.

    gateway process(es) ──Unix socket, framed msgpack (`wire`)──▶ host (`host`)
                                                                   ▲ restarted by
                                                      the keeper (`keeper`)

`llmeu serve` starts one keeper per machine (`launch`) before it forks any
worker; every worker connects to the same socket
(`llmeu.providers.host_link`). The keeper starts the host, waits for its
start check (`start_check`), restarts it with backoff when it exits or stops
answering, and tells the gateway in one line why a host could not start;
the process that launched the keeper launches another when it ends.
"""
