# syntax=docker/dockerfile:1
# fgrpo-verl on GPUs: verl's official vLLM application image for the verl 0.9 line plus verl 0.9.1 and this
# package. The base carries CUDA 13.0.2, Python 3.12, torch 2.11.0 and vLLM 0.24.0 (the versions verl 0.9.1's
# [vllm] extra pins) with verl's Megatron stack (Megatron-core, mbridge, TransformerEngine, flash-attn); the
# build below fails if megatron.core or vllm cannot be imported. verl's images install verl only for its
# dependency closure and then uninstall it, so verl itself is installed here.
# Build:  docker build -t fgrpo-verl:0.1.0 .
# Pinned by digest so a re-pushed tag cannot change the CUDA / vLLM / Megatron stack underneath a run.
ARG BASE_IMAGE=verlai/verl:vllm024.dev2@sha256:b867883b0dd011363e69ab2ab344922a28c5bd0409e2a324e3ee70fb27ca7543
FROM ${BASE_IMAGE}

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV PIP_NO_CACHE_DIR=1 \
    PIP_BREAK_SYSTEM_PACKAGES=1 \
    PYTHONUNBUFFERED=1 \
    PYTHON=python3
WORKDIR /opt/fgrpo-verl

# Freeze the image's GPU stack as constraints so nothing below can replace torch, vLLM or Megatron.
RUN python3 -m pip freeze \
    | grep -iE '^(torch|torchvision|torchaudio|vllm|triton|transformers|tokenizers|flash[-_]attn|megatron[-_]core|transformer[-_]engine|ray)==' \
    > /opt/image-constraints.txt \
    && grep -iqE '^torch==' /opt/image-constraints.txt \
    && grep -iqE '^vllm==' /opt/image-constraints.txt

COPY pyproject.toml README.md constraints.txt ./
COPY fgrpo_verl ./fgrpo_verl
COPY reward_fns ./reward_fns
RUN python3 -m pip install -c /opt/image-constraints.txt "verl[verl-core]==0.9.1" \
    && python3 -m pip install -c /opt/image-constraints.txt ".[data]" \
    && python3 -c "import verl, fgrpo_verl.plugin as p; assert p.LOAD_ERROR is None, p.LOAD_ERROR" \
    && python3 -c "import megatron.core, vllm; print('megatron-core', megatron.core.__version__, 'vllm', vllm.__version__)"

COPY recipes ./recipes
COPY scripts ./scripts
CMD ["bash", "-c", "echo 'run a recipe, e.g. bash recipes/f_grpo.sh --dry-run'; ls recipes"]
