"""The requests dock: several requests through a paged pool, the block grid and prefix caching off vs on."""
