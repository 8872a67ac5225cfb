"""The panels under the lanes: cumulative costs and time per step, the text, the timeline.

Views read the Session only; they never import the worker, controller, toolbar or window."""
