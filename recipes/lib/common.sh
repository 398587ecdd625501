# shellcheck shell=bash
# Shared base of every recipe: cluster, engines, model preset, data, the paper's hyperparameters,
# logging and monitoring, Ray start/join, and the launch (or dry run). Sourced by recipes/*.sh.
#
# Every knob is an environment variable named once below, with its default; a recipe's trailing
# arguments are Hydra overrides handed to verl last, so they win over everything here.
#   DRY_RUN=1 recipes/f_grpo.sh            or   recipes/f_grpo.sh --dry-run
# composes the final config through verl's own Hydra config and validates it on CPU.

if [[ -n "${FGRPO_COMMON_SOURCED:-}" ]]; then return 0; fi
FGRPO_COMMON_SOURCED=1

RECIPES_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPO_DIR="$(cd "$RECIPES_DIR/.." && pwd)"

# ---------------------------------------------------------------- cluster
: "${NNODES:=2}"                      # nodes in the job (learner nodes + ROLLOUT_NNODES when async)
: "${GPUS_PER_NODE:=8}"               # GPUs per node
: "${NODE_RANK:=${SLURM_NODEID:-0}}"  # 0 = Ray head (runs the trainer); others join and block
: "${HEAD_IP:=}"                      # IP of node 0, required when NNODES > 1
: "${RAY_PORT:=6379}"                 # Ray GCS port on the head
: "${RAY_DASHBOARD_PORT:=8265}"       # Ray dashboard on the head
: "${RAY_METRICS_PORT:=8080}"         # Ray's own Prometheus metrics on every node
: "${RAY_WAIT_SECONDS:=900}"          # how long the head waits for all nodes to join
: "${PYTHON:=python3}"                # interpreter with verl + fgrpo-verl installed

# ---------------------------------------------------------------- engines
: "${ENGINE:=megatron}"               # learner: megatron (TP/PP across nodes) | fsdp (small runs)
: "${ROLLOUT_MODE:=colocate}"         # colocate (hybrid engine, on-policy) | async (separate rollout nodes)
: "${ROLLOUT_ENGINE:=vllm}"           # vllm | sglang
: "${ROLLOUT_NNODES:=1}"              # async: nodes taken out of NNODES for vLLM servers
: "${STALENESS:=1}"                   # async: max model versions a trajectory may span (verl's max_off_policy_threshold)
: "${STALENESS_STRATEGY:=drop}"       # async: drop | wait for trajectories over the bound
: "${WEIGHT_SYNC_BACKEND:=nccl}"      # async: learner -> rollout weight transfer (nccl | nixl | mooncake)

# ---------------------------------------------------------------- model preset
: "${MODEL_PRESET:=qwen2.5-7b}"       # qwen2.5-7b | qwen3-4b-base | llama3.2-3b-instruct
case "$MODEL_PRESET" in
  qwen2.5-7b)
    : "${MODEL_PATH:=Qwen/Qwen2.5-7B}"
    : "${MAX_RESPONSE_LENGTH:=8192}"
    : "${TRAIN_TP:=4}" "${TRAIN_PP:=2}" "${ROLLOUT_TP:=2}" ;;
  qwen3-4b-base)
    : "${MODEL_PATH:=Qwen/Qwen3-4B-Base}"
    : "${MAX_RESPONSE_LENGTH:=4096}"
    : "${ENABLE_THINKING:=True}"      # the paper trains Qwen3 with thinking on (chat template kwarg)
    : "${TRAIN_TP:=2}" "${TRAIN_PP:=1}" "${ROLLOUT_TP:=1}" ;;
  llama3.2-3b-instruct)
    : "${MODEL_PATH:=meta-llama/Llama-3.2-3B-Instruct}"
    : "${MAX_RESPONSE_LENGTH:=8192}"
    : "${TRAIN_TP:=2}" "${TRAIN_PP:=1}" "${ROLLOUT_TP:=1}" ;;
  *)
    echo "MODEL_PRESET=$MODEL_PRESET is unknown; use qwen2.5-7b, qwen3-4b-base or llama3.2-3b-instruct" \
         "(or set MODEL_PATH, MAX_RESPONSE_LENGTH, TRAIN_TP, TRAIN_PP, ROLLOUT_TP with any preset)" >&2
    exit 2 ;;
esac
: "${ENABLE_THINKING:=}"              # Qwen3 chat templates: True | False; empty = template default
: "${TRAIN_CP:=1}"                    # Megatron context parallel size
: "${SEQUENCE_PARALLEL:=True}"        # Megatron sequence parallel (with TP > 1)
: "${PARAM_OFFLOAD:=False}"           # offload parameters to CPU between phases (Megatron and FSDP)
: "${OPTIMIZER_OFFLOAD:=False}"       # offload optimizer state to CPU
: "${ULYSSES_SP:=1}"                  # FSDP: Ulysses sequence parallel size
: "${ROLLOUT_GPU_MEMORY:=0.6}"        # vLLM gpu_memory_utilization

# ---------------------------------------------------------------- data (scripts/prepare_data.py writes these)
: "${DATA_DIR:=$HOME/data/fgrpo}"
: "${TRAIN_FILES:=$DATA_DIR/deepscaler.parquet}"
: "${VAL_FILES:=[$DATA_DIR/math500.parquet,$DATA_DIR/aime24.parquet,$DATA_DIR/aime25.parquet,$DATA_DIR/amc23.parquet]}"
: "${REWARD_FN_PATH:=pkg://reward_fns}"  # verl loads compute_score from here
: "${REWARD_FN_NAME:=compute_score}"

# ---------------------------------------------------------------- paper hyperparameters (Qwen2.5-7B)
: "${TRAIN_BATCH_SIZE:=256}"          # prompts per step
: "${MINI_BATCH_SIZE:=64}"            # prompts per optimizer update (4 updates per step)
: "${N_ROLLOUTS:=8}"                  # group size N
: "${MAX_PROMPT_LENGTH:=1024}"        # the data is filtered to <= 1024 prompt tokens
: "${LR:=1e-6}"                       # constant after warmup
: "${WARMUP_STEPS:=15}"
: "${WEIGHT_DECAY:=0.01}"
: "${GRAD_CLIP:=1.0}"
: "${EPOCHS:=10}"
: "${PPO_EPOCHS:=1}"
: "${TEMPERATURE:=1.0}"
: "${TOP_P:=1.0}"
: "${VAL_N:=4}"                       # samples per validation prompt (temperature 1.0)
: "${USE_DYNAMIC_BSZ:=True}"          # pack micro-batches by tokens (long responses)
: "${MICRO_BATCH_PER_GPU:=4}"         # used when USE_DYNAMIC_BSZ=False
: "${MAX_TOKENS_PER_GPU:=$(( (MAX_PROMPT_LENGTH + MAX_RESPONSE_LENGTH) * 2 ))}"
: "${SEED:=42}"

# ---------------------------------------------------------------- logging, checkpoints, monitoring
: "${PROJECT_NAME:=fgrpo}"
: "${LOG_DIR:=$REPO_DIR/runs}"        # logs, file logger, rollout dumps
: "${CKPT_DIR:=$HOME/checkpoints/fgrpo}"
: "${LOGGERS:=[console,file]}"        # verl trainer.logger (console, file, wandb, tensorboard, ...)
: "${SAVE_FREQ:=50}"
: "${TEST_FREQ:=25}"
: "${DUMP_ROLLOUTS:=True}"            # write every step's rollouts (for fgrpo-verl analyze-rollouts)
: "${METRICS_PORT:=9464}"             # fgrpo Prometheus endpoint on the driver (empty = off)
: "${METRICS_FILE_SD:=}"              # write the endpoint as a Prometheus file_sd target here (shared FS path)
: "${ROLLOUT_PROMETHEUS:=False}"      # verl's vLLM server metrics (writes a Prometheus file_sd target)
: "${PROMETHEUS_SD_FILE:=/tmp/ray/session_latest/metrics/prometheus/prometheus.yml}"

FGRPO_OVERRIDES=()
FGRPO_KNOB_ARGS=()

# knob VAR hydra.key -- pass $VAR to verl as hydra.key and remember the pair for the dry run's messages.
knob() {
  local var="$1" key="$2"
  FGRPO_OVERRIDES+=("$key=${!var}")
  FGRPO_KNOB_ARGS+=(--knob "$var=$key")
}

# fixed hydra.key=value ... -- overrides that are part of a recipe's definition, not knobs.
fixed() {
  FGRPO_OVERRIDES+=("$@")
}

# Overrides shared by every method, from the knobs above (called by launch, after the method's knobs).
common_overrides() {
  # Variables below are derived knobs, read by `knob` through ${!var}.
  # shellcheck disable=SC2034
  TRAIN_NNODES="$NNODES"
  # shellcheck disable=SC2034
  PARAM_SYNC_STEP="$(( TRAIN_BATCH_SIZE / (MINI_BATCH_SIZE > 0 ? MINI_BATCH_SIZE : 1) ))"
  if [[ "$ROLLOUT_MODE" == async ]]; then
    # shellcheck disable=SC2034
    TRAIN_NNODES="$(( NNODES - ROLLOUT_NNODES ))"
  elif [[ "$ROLLOUT_MODE" != colocate ]]; then
    echo "ROLLOUT_MODE=$ROLLOUT_MODE is unknown; use colocate or async" >&2
    exit 2
  fi
  knob TRAIN_NNODES trainer.nnodes
  knob GPUS_PER_NODE trainer.n_gpus_per_node
  knob MODEL_PATH actor_rollout_ref.model.path
  knob TRAIN_FILES data.train_files
  knob VAL_FILES data.val_files
  knob MAX_PROMPT_LENGTH data.max_prompt_length
  knob MAX_RESPONSE_LENGTH data.max_response_length
  knob TRAIN_BATCH_SIZE data.train_batch_size
  knob SEED data.seed
  if [[ -n "$ENABLE_THINKING" ]]; then
    knob ENABLE_THINKING +data.apply_chat_template_kwargs.enable_thinking
  fi
  fixed data.filter_overlong_prompts=True data.truncation=error
  knob REWARD_FN_PATH reward.custom_reward_function.path
  knob REWARD_FN_NAME reward.custom_reward_function.name

  # Actor: the paper's optimiser, no KL, one PPO epoch.
  knob LR actor_rollout_ref.actor.optim.lr
  knob WARMUP_STEPS actor_rollout_ref.actor.optim.lr_warmup_steps
  knob WEIGHT_DECAY actor_rollout_ref.actor.optim.weight_decay
  knob GRAD_CLIP actor_rollout_ref.actor.optim.clip_grad
  knob MINI_BATCH_SIZE actor_rollout_ref.actor.ppo_mini_batch_size
  knob PPO_EPOCHS actor_rollout_ref.actor.ppo_epochs
  knob USE_DYNAMIC_BSZ actor_rollout_ref.actor.use_dynamic_bsz
  knob MICRO_BATCH_PER_GPU actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu
  knob MAX_TOKENS_PER_GPU actor_rollout_ref.actor.ppo_max_token_len_per_gpu
  knob MICRO_BATCH_PER_GPU actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu
  knob MICRO_BATCH_PER_GPU actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu
  fixed actor_rollout_ref.actor.use_kl_loss=False algorithm.use_kl_in_reward=False \
        actor_rollout_ref.actor.entropy_coeff=0

  # Learner engine.
  case "$ENGINE" in
    megatron)
      fixed model_engine=megatron
      knob TRAIN_TP actor_rollout_ref.actor.megatron.tensor_model_parallel_size
      knob TRAIN_PP actor_rollout_ref.actor.megatron.pipeline_model_parallel_size
      knob TRAIN_CP actor_rollout_ref.actor.megatron.context_parallel_size
      knob SEQUENCE_PARALLEL actor_rollout_ref.actor.megatron.sequence_parallel
      knob PARAM_OFFLOAD actor_rollout_ref.actor.megatron.param_offload
      knob OPTIMIZER_OFFLOAD actor_rollout_ref.actor.megatron.optimizer_offload ;;
    fsdp)
      fixed actor_rollout_ref.actor.strategy=fsdp2
      knob ULYSSES_SP actor_rollout_ref.actor.ulysses_sequence_parallel_size
      knob PARAM_OFFLOAD actor_rollout_ref.actor.fsdp_config.param_offload
      knob OPTIMIZER_OFFLOAD actor_rollout_ref.actor.fsdp_config.optimizer_offload ;;
    *)
      echo "ENGINE=$ENGINE is unknown; use megatron or fsdp" >&2
      exit 2 ;;
  esac

  # Rollouts.
  knob ROLLOUT_ENGINE actor_rollout_ref.rollout.name
  knob ROLLOUT_TP actor_rollout_ref.rollout.tensor_model_parallel_size
  knob ROLLOUT_GPU_MEMORY actor_rollout_ref.rollout.gpu_memory_utilization
  knob N_ROLLOUTS actor_rollout_ref.rollout.n
  knob TEMPERATURE actor_rollout_ref.rollout.temperature
  knob TOP_P actor_rollout_ref.rollout.top_p
  knob VAL_N actor_rollout_ref.rollout.val_kwargs.n
  knob TEMPERATURE actor_rollout_ref.rollout.val_kwargs.temperature
  fixed actor_rollout_ref.rollout.val_kwargs.do_sample=True
  if [[ "$ROLLOUT_MODE" == async ]]; then
    # verl V1 separate_async: vLLM on ROLLOUT_NNODES nodes of its own, learner on the rest. Each step
    # trains TRAIN_BATCH_SIZE / MINI_BATCH_SIZE mini-batches as they arrive (pi_old kept fixed), then pushes
    # the weights once; trajectories spanning more than STALENESS weight versions are dropped.
    fixed trainer.v1.trainer_mode=separate_async actor_rollout_ref.hybrid_engine=False
    knob ROLLOUT_NNODES actor_rollout_ref.rollout.nnodes
    knob GPUS_PER_NODE actor_rollout_ref.rollout.n_gpus_per_node
    knob WEIGHT_SYNC_BACKEND actor_rollout_ref.rollout.checkpoint_engine.backend
    knob PARAM_SYNC_STEP trainer.v1.separate_async.parameter_sync_step
    knob STALENESS trainer.v1.sampler.max_off_policy_threshold
    knob STALENESS_STRATEGY trainer.v1.sampler.max_off_policy_strategy
  else
    fixed trainer.v1.trainer_mode=sync actor_rollout_ref.hybrid_engine=True
  fi

  # Trainer, logging, checkpoints, monitoring.
  knob EPOCHS trainer.total_epochs
  knob PROJECT_NAME trainer.project_name
  knob EXPERIMENT_NAME trainer.experiment_name
  knob LOGGERS trainer.logger
  knob SAVE_FREQ trainer.save_freq
  knob TEST_FREQ trainer.test_freq
  # shellcheck disable=SC2034
  CKPT_RUN_DIR="$CKPT_DIR/$EXPERIMENT_NAME"
  knob CKPT_RUN_DIR trainer.default_local_dir
  if [[ "$DUMP_ROLLOUTS" == True ]]; then
    # shellcheck disable=SC2034
    ROLLOUT_DUMP_DIR="$LOG_DIR/$EXPERIMENT_NAME/rollouts"
    knob ROLLOUT_DUMP_DIR trainer.rollout_data_dir
  fi
  if [[ -n "$METRICS_PORT" ]]; then
    knob METRICS_PORT +algorithm.focal.metrics.port
    if [[ -n "$METRICS_FILE_SD" ]]; then
      knob METRICS_FILE_SD +algorithm.focal.metrics.file_sd
    fi
  fi
  knob ROLLOUT_PROMETHEUS actor_rollout_ref.rollout.prometheus.enable
  knob PROMETHEUS_SD_FILE actor_rollout_ref.rollout.prometheus.file
}

# Start Ray on this node: the head on NODE_RANK 0 (then wait for every node), a blocking worker elsewhere.
ray_up() {
  if (( NNODES <= 1 )); then return 0; fi
  if [[ -z "$HEAD_IP" ]]; then
    echo "HEAD_IP is empty: with NNODES=$NNODES every node needs node 0's IP (e.g. HEAD_IP=\$(hostname -I | cut -d' ' -f1) on node 0)" >&2
    exit 2
  fi
  if (( NODE_RANK == 0 )); then
    ray start --head --node-ip-address="$HEAD_IP" --port="$RAY_PORT" --num-gpus="$GPUS_PER_NODE" \
      --dashboard-host=0.0.0.0 --dashboard-port="$RAY_DASHBOARD_PORT" --metrics-export-port="$RAY_METRICS_PORT"
    export RAY_ADDRESS="$HEAD_IP:$RAY_PORT"
    local want=$(( NNODES * GPUS_PER_NODE )) waited=0 have=0
    until have="$("$PYTHON" -c 'import ray; ray.init(address="auto", logging_level="ERROR"); print(int(ray.cluster_resources().get("GPU", 0)))' 2>/dev/null)" \
          && (( have >= want )); do
      if (( waited >= RAY_WAIT_SECONDS )); then
        echo "only ${have:-0} of $want GPUs joined the Ray cluster after ${RAY_WAIT_SECONDS}s; check the other nodes' logs" >&2
        exit 3
      fi
      sleep 10
      waited=$(( waited + 10 ))
    done
    echo "Ray cluster ready: $have GPUs on $NNODES nodes (dashboard http://$HEAD_IP:$RAY_DASHBOARD_PORT)"
  else
    # The head runs the CPU pre-flight before starting Ray: wait for it, then hold this node for its trainer.
    local waited=0
    # shellcheck disable=SC2016  # $1 / $2 expand in the child shell: a plain TCP probe of the head's port
    until timeout 5 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$HEAD_IP" "$RAY_PORT" 2>/dev/null; do
      if (( waited >= RAY_WAIT_SECONDS )); then
        echo "no Ray head at $HEAD_IP:$RAY_PORT after ${RAY_WAIT_SECONDS}s; start node 0 (NODE_RANK=0) too," \
             "and check HEAD_IP / RAY_PORT and the head's log (its pre-flight may have failed)" >&2
        exit 3
      fi
      sleep 5
      waited=$(( waited + 5 ))
    done
    exec ray start --address="$HEAD_IP:$RAY_PORT" --num-gpus="$GPUS_PER_NODE" \
      --metrics-export-port="$RAY_METRICS_PORT" --block
  fi
}

# launch NAME [--dry-run | --print-config] [hydra overrides...] -- dry run, the config as verl's CLI composes
# it, or pre-flight + Ray + verl's trainer.
# RECIPE_NAME (set by wrapper recipes) replaces NAME in messages.
launch() {
  local name="${RECIPE_NAME:-$1}"
  shift
  local dry="${DRY_RUN:-0}" print_config=0 extra=() arg
  for arg in "$@"; do
    case "$arg" in
      --dry-run) dry=1 ;;
      --print-config) print_config=1 ;;
      *) extra+=("$arg") ;;
    esac
  done
  common_overrides
  local overrides=("${FGRPO_OVERRIDES[@]}" "${extra[@]}")
  local preflight=("$PYTHON" -m fgrpo_verl.cli dry-run --recipe "$name" --nnodes "$NNODES"
                   --gpus-per-node "$GPUS_PER_NODE" "${FGRPO_KNOB_ARGS[@]}" -- "${overrides[@]}")
  if [[ "$print_config" == 1 ]]; then
    # verl's own entry point composes the config from the same overrides and prints it (Hydra --cfg job).
    exec "$PYTHON" -m verl.trainer.main_ppo "${overrides[@]}" --cfg job
  fi
  if [[ "$dry" == 1 ]]; then
    exec "${preflight[@]}"
  fi
  if (( NODE_RANK == 0 )); then
    # Fail on CPU, before Ray claims a GPU, if anything in the config is wrong.
    "${preflight[@]}"
  fi
  ray_up
  mkdir -p "$LOG_DIR/$EXPERIMENT_NAME"
  export VERL_FILE_LOGGER_ROOT="$LOG_DIR" HYDRA_FULL_ERROR=1
  echo "launching $name: logs in $LOG_DIR/$EXPERIMENT_NAME"
  echo "Prometheus targets: fgrpo metrics on ${HEAD_IP:-$(hostname)}:${METRICS_PORT:-off} (the driver);" \
       "Ray nodes in /tmp/ray/prom_metrics_service_discovery.json; vLLM servers in $PROMETHEUS_SD_FILE" \
       "when ROLLOUT_PROMETHEUS=True"
  "$PYTHON" -m verl.trainer.main_ppo "${overrides[@]}" 2>&1 | tee "$LOG_DIR/$EXPERIMENT_NAME/train.log"
}
