#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# F-CISPO: CISPO (clipped, detached IS weight on every token) with the focal weight.
# Usage: recipes/f_cispo.sh [--dry-run] [hydra.key=value ...]     (knobs: recipes/lib/common.sh + below)
# A/B baseline: recipes/cispo.sh (gamma = 0).
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# ---- method knobs (paper: eps_low 1.0, eps_high 5.0, gamma 1.0 for Qwen2.5-7B)
: "${GAMMA:=1.0}"                     # focal exponent; 0 = plain CISPO
: "${CLIP_LOW:=1.0}"                  # IS weight clipped to [1 - CLIP_LOW, 1 + CLIP_HIGH]
: "${CLIP_HIGH:=5.0}"
: "${LOSS_AGG_MODE:=token-mean}"
: "${EXPERIMENT_NAME:=f-cispo-g${GAMMA}-${MODEL_PRESET}}"

fixed algorithm.adv_estimator=focal_grpo +algorithm.focal.rewards=binary \
      actor_rollout_ref.actor.policy_loss.loss_mode=cispo
knob GAMMA +algorithm.focal.gamma
knob CLIP_LOW actor_rollout_ref.actor.clip_ratio_low
knob CLIP_HIGH actor_rollout_ref.actor.clip_ratio_high
knob LOSS_AGG_MODE actor_rollout_ref.actor.loss_agg_mode
launch f_cispo "$@"
