"""The roofline dock: measured peaks of this machine, every recorded step placed, presets on real GPUs."""
