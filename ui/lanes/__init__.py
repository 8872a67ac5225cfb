"""The lanes: one view per lane (K/V tables, queries, attention, readouts), the all-heads overview, legend, hover.

Views read the Session only; they never import the worker, controller, toolbar or window."""
