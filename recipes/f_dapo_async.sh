#!/usr/bin/env bash
# F-DAPO with asynchronous actor-learner rollouts (verl V1 separate_async): vLLM servers on ROLLOUT_NNODES
# nodes of their own keep generating while the Megatron learner trains on the rest; weights are pushed
# over NCCL once per step and trajectories spanning more than STALENESS weight versions are dropped.
# Default: 3 nodes = 2 learner nodes (TP 4 x PP 2, DP 2) + 1 rollout node (4 vLLM replicas of TP 2).
# Usage: recipes/f_dapo_async.sh [--dry-run] [hydra.key=value ...]; any recipe takes ROLLOUT_MODE=async.
set -euo pipefail
export RECIPE_NAME="${RECIPE_NAME:-f_dapo_async}"
export ROLLOUT_MODE=async
export NNODES="${NNODES:-3}"
export ROLLOUT_NNODES="${ROLLOUT_NNODES:-1}"
export EXPERIMENT_NAME="${EXPERIMENT_NAME:-f-dapo-async-g${GAMMA:-0.5}-${MODEL_PRESET:-qwen2.5-7b}}"
exec "$(dirname "${BASH_SOURCE[0]}")/f_dapo.sh" "$@"
