"""The command line: ``entry`` parses and dispatches by its table ``COMMANDS``; one module per subcommand (run, memory,
roofline, models, gqa, inspect, screenshot, export), each exporting ``HELP``, ``add_parser`` and ``run``; ``requests``
and ``batching`` are parts of ``run``, ``args`` what every parser shares.

Imports every engine part; nothing in the engine imports it. Only ``entry``, ``screenshot`` and ``export`` reach
the app (lazily)."""
