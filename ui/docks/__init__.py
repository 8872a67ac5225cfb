"""The extra docks (memory, roofline, requests), declared in ``registry`` and built on first show.

Each dock is a folder of its own; docks never import the worker, controller, toolbar or window."""
