#!/usr/bin/env bash
# DAPO baseline for A/B runs against F-DAPO: recipes/f_dapo.sh with gamma = 0 (focal weight 1 everywhere),
# the same estimator, data, seeds and knobs. Usage: recipes/dapo.sh [--dry-run] [hydra.key=value ...]
set -euo pipefail
export RECIPE_NAME="${RECIPE_NAME:-dapo}"
export GAMMA=0
export EXPERIMENT_NAME="${EXPERIMENT_NAME:-dapo-${MODEL_PRESET:-qwen2.5-7b}}"
exec "$(dirname "${BASH_SOURCE[0]}")/f_dapo.sh" "$@"
