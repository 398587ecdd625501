#!/usr/bin/env bash
# F-GRPO on one node with the FSDP2 learner and colocated vLLM: a small run (Qwen3-4B-Base, responses
# <= 4096 tokens) to check a set-up before a multi-node Megatron run.
# Usage: recipes/f_grpo_fsdp_small.sh [--dry-run] [hydra.key=value ...]
set -euo pipefail
export RECIPE_NAME="${RECIPE_NAME:-f_grpo_fsdp_small}"
export ENGINE=fsdp
export NNODES="${NNODES:-1}"
export MODEL_PRESET="${MODEL_PRESET:-qwen3-4b-base}"
exec "$(dirname "${BASH_SOURCE[0]}")/f_grpo.sh" "$@"
