"""The model phase: the engine interface, the typed IR, and the compiled runtime model."""
