"""kvsim's desktop app (PySide6 + pyqtgraph). It imports the engine (``kvsim``); never the reverse.

    app.main(model=None)      the window: toolbar, two lanes side by side, costs, text, timeline
    screenshot.main(args)     ``kvsim screenshot``: the window rendered offscreen to PNGs

Data flows one way: ``worker`` (its own QThread) runs the Simulator one step per request and emits
frozen StepRecords → ``session.Session`` appends them and moves the cursor → every view redraws from
records. ``attention`` derives attention rows from stored Q and K (pure numpy).
"""
