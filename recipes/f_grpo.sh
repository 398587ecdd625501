#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# F-GRPO: GRPO with the focal weight g = (1 - mu_hat)^gamma on every group-relative advantage.
# Usage: recipes/f_grpo.sh [--dry-run] [hydra.key=value ...]      (knobs: recipes/lib/common.sh + below)
# A/B baseline: recipes/grpo.sh (the same run with gamma = 0, i.e. plain GRPO).
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# ---- method knobs (paper: Qwen2.5-7B, GRPO clip 0.2/0.2, token-mean, binary math-verify reward)
: "${GAMMA:=0.5}"                     # focal exponent; 0 = plain GRPO
: "${CLIP_LOW:=0.2}"
: "${CLIP_HIGH:=0.2}"
: "${LOSS_AGG_MODE:=token-mean}"
: "${EXPERIMENT_NAME:=f-grpo-g${GAMMA}-${MODEL_PRESET}}"

fixed algorithm.adv_estimator=focal_grpo +algorithm.focal.rewards=binary \
      actor_rollout_ref.actor.policy_loss.loss_mode=vanilla
knob GAMMA +algorithm.focal.gamma
knob CLIP_LOW actor_rollout_ref.actor.clip_ratio_low
knob CLIP_HIGH actor_rollout_ref.actor.clip_ratio_high
knob LOSS_AGG_MODE actor_rollout_ref.actor.loss_agg_mode
launch f_grpo "$@"
