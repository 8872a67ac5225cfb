"""The command line: ``entry`` parses and dispatches; one module per subcommand (run, requests, roofline, reports).

Imports every engine part; nothing in the engine imports it. Only ``entry`` reaches the app (lazily)."""
