"""``kvsim`` with no arguments: the desktop simulator.

    main(model=None) -> exit status

Opens the main window on the bundled model (or ``model``) with an example prompt loaded, so Step
and Play work at once. Model loading and every simulator step run on a worker thread.
"""

from __future__ import annotations

import os
import sys
import time

_T0 = time.perf_counter()


def make_app(argv: list[str] | None = None):
    from PySide6.QtWidgets import QApplication

    from . import theme

    app = QApplication.instance()
    if app is None:
        app = QApplication(argv if argv is not None else [sys.argv[0]])
        app.setApplicationName("kvsim")
        app.setOrganizationName("kvsim")
    theme.apply(app)
    return app


def main(model: str | None = None) -> int:
    app = make_app()
    from .window import MainWindow

    window = MainWindow(model=model)
    if os.environ.get("KVSIM_EXIT_AFTER_FIRST_PAINT"):  # benchmarks: launch-to-first-paint
        def done(at: float) -> None:
            print(f"first-paint-ms {(at - _T0) * 1000:.1f}", flush=True)
            from PySide6.QtCore import QTimer

            QTimer.singleShot(0, window.close)
        window.first_painted.connect(done)
    window.show()
    code = app.exec()
    if not window.shutdown():
        # the worker is inside a model load that cannot be interrupted; destroying its running QThread
        # would abort the process, so leave at once (nothing of the user's is unsaved in a load)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(code))
    return int(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else None))
