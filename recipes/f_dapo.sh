#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# F-DAPO: DAPO (clip-higher, token-mean, dynamic sampling, overlong shaping) with the focal weight.
# Usage: recipes/f_dapo.sh [--dry-run] [hydra.key=value ...]      (knobs: recipes/lib/common.sh + below)
# A/B baseline: recipes/dapo.sh (gamma = 0).
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# ---- method knobs (paper: clip 0.2/0.28; DAPO: clip_c 10, filter groups on acc, soft overlong punishment)
# verl's V1 replay buffer evicts zero-variance groups and refills them with new prompts as they finish.
: "${GAMMA:=0.5}"                     # focal exponent; 0 = plain DAPO
: "${CLIP_LOW:=0.2}"
: "${CLIP_HIGH:=0.28}"
: "${CLIP_C:=10.0}"                   # dual-clip bound for negative advantages
: "${LOSS_AGG_MODE:=token-mean}"
: "${DYNAMIC_SAMPLING:=True}"         # drop all-correct / all-wrong groups and refill (algorithm.filter_groups)
: "${FILTER_METRIC:=acc}"             # correctness, not the length-shaped score
: "${OVERLONG_BUFFER_LEN:=$(( MAX_RESPONSE_LENGTH / 8 ))}"  # length penalty ramps over the last tokens
: "${OVERLONG_PENALTY:=1.0}"          # penalty at the maximum length
: "${EXPERIMENT_NAME:=f-dapo-g${GAMMA}-${MODEL_PRESET}}"

# Signed rewards (+1 / -1, as DAPO's math_dapo) keep a fully penalised correct answer above a wrong one.
fixed algorithm.adv_estimator=focal_grpo +algorithm.focal.rewards=signed \
      +reward.custom_reward_function.reward_kwargs.score_scheme=signed \
      actor_rollout_ref.actor.policy_loss.loss_mode=vanilla \
      reward.reward_manager.name=dapo +reward.reward_kwargs.overlong_buffer_cfg.enable=True \
      +reward.reward_kwargs.overlong_buffer_cfg.log=False
knob GAMMA +algorithm.focal.gamma
knob CLIP_LOW actor_rollout_ref.actor.clip_ratio_low
knob CLIP_HIGH actor_rollout_ref.actor.clip_ratio_high
knob CLIP_C actor_rollout_ref.actor.clip_ratio_c
knob LOSS_AGG_MODE actor_rollout_ref.actor.loss_agg_mode
knob DYNAMIC_SAMPLING algorithm.filter_groups.enable
knob FILTER_METRIC algorithm.filter_groups.metric
knob OVERLONG_BUFFER_LEN +reward.reward_kwargs.overlong_buffer_cfg.len
knob OVERLONG_PENALTY +reward.reward_kwargs.overlong_buffer_cfg.penalty_factor
knob MAX_RESPONSE_LENGTH +reward.reward_kwargs.max_resp_len
launch f_dapo "$@"
