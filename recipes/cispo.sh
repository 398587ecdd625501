#!/usr/bin/env bash
# CISPO baseline for A/B runs against F-CISPO: recipes/f_cispo.sh with gamma = 0 (focal weight 1 everywhere),
# the same estimator, data, seeds and knobs. Usage: recipes/cispo.sh [--dry-run] [hydra.key=value ...]
set -euo pipefail
export RECIPE_NAME="${RECIPE_NAME:-cispo}"
export GAMMA=0
export EXPERIMENT_NAME="${EXPERIMENT_NAME:-cispo-${MODEL_PRESET:-qwen2.5-7b}}"
exec "$(dirname "${BASH_SOURCE[0]}")/f_cispo.sh" "$@"
