"""The schedules a requests run has, named once (torch-free: the app's views import it before the engine loads).

* "sequential": one request at a time, each to its end (``kvsim.serving.requests``);
* "interleaved": one request at a time, prefills in turn then decodes round-robin (same engine);
* "continuous": continuous batching, one batched forward a step (``kvsim.serving.batching``).
"""

SCHEDULES = ("sequential", "interleaved", "continuous")
#: the schedules of ``kvsim.serving.requests`` (one forward per request and step)
ONE_AT_A_TIME = SCHEDULES[:2]
