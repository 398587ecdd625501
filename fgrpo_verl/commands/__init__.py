"""Sub-commands of ``fgrpo-verl`` (one module each)."""
