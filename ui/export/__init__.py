"""Export for slides: pictures (PNG/SVG), movies (GIF/MP4), CSV, and the headless screenshot and export commands."""
