"""Rule-based reward functions for verl (math, instruction following)."""
