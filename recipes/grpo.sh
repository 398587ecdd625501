#!/usr/bin/env bash
# GRPO baseline for A/B runs against F-GRPO: recipes/f_grpo.sh with gamma = 0 (focal weight 1 everywhere),
# the same estimator, data, seeds and knobs. Usage: recipes/grpo.sh [--dry-run] [hydra.key=value ...]
set -euo pipefail
export RECIPE_NAME="${RECIPE_NAME:-grpo}"
export GAMMA=0
export EXPERIMENT_NAME="${EXPERIMENT_NAME:-grpo-${MODEL_PRESET:-qwen2.5-7b}}"
exec "$(dirname "${BASH_SOURCE[0]}")/f_grpo.sh" "$@"
