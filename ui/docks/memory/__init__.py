"""The memory dock: the seed formula with every term editable, live cache bytes per lane, bytes vs context."""
