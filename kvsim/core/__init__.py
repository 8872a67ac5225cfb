"""The shared vocabulary of the engine: sampling and its error, attention visibility, units.

Imports nothing else of kvsim; every other part may import it."""
