import os
import sys
from pathlib import Path

# GUI tests run without a display; set before any Qt import
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).parent))
