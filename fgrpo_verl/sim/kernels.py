"""Compiled (numba) loops for one simulation step: metrics, an inverse-CDF sampler, the closed-form gradient.

At |A| = 128,000 a step written as torch ops is dozens of small kernels whose per-call overhead
dominates.  Here everything between the softmax and AdamW (both stay single torch kernels) is two
compiled loops over each run's row:

* :func:`measure_and_draw`: Q_pos, M_ret and the anchor probability, then N i.i.d. draws by
  inverse CDF.  The N uniforms arrive sorted (exponential spacings: U_(j) = E_1 + ... + E_j over
  E_1 + ... + E_{N+1} is distributed as N sorted uniforms), so one left-to-right walk over the
  block sums of pi, entering only blocks that hold a draw, yields every action in O(N + |A| / B +
  B * touched blocks), with no table over |A| and no per-sample Python loop.
* :func:`write_gradient`: -dL/dz from the (sorted) draws, per paper Eq. 12-13 with the mean
  baseline: c_a = g / N * n_a * r(a), r = (R_c - R_w)(1 - mu_hat) for a correct action and
  -(R_c - R_w) mu_hat for a wrong one.  ``logprob``: -dL/dz = -c (sum(c) = 0 identically);
  ``prob``: -dL/dz = p * (<c, p> - c), dense only through p * <c, p>.

The loops accumulate in float64 whatever the logits' dtype.  ``cache=True`` keeps the compiled
code on disk (next to this file's ``__pycache__``), so only the first run pays the compile.
"""

from __future__ import annotations

import numba
import numpy as np

BLOCK = 512  # sampler block: |A| / 512 block sums are walked, then the chunks of a block holding a draw
CHUNK = 32  # ... then the actions of a chunk holding a draw

# stats columns written by measure_and_draw
Q_POS, M_RET, ANCHOR, NUM_CORRECT_DRAWS, P_CORRECT_DRAWS, P_WRONG_DRAWS = range(6)
NUM_STATS = 6


@numba.njit(cache=True, nogil=True, fastmath=True)
def _chunk_masses(p: np.ndarray, chunks: np.ndarray, blocks: np.ndarray) -> float:
    """Sum of pi over each chunk of CHUNK actions and each block of BLOCK actions, and the total.

    fastmath lets the chunk sums vectorise (with a constant trip count; a min() bound was 5x slower).
    """
    num_actions = p.shape[0]
    full = num_actions // CHUNK
    for c in range(full):
        s = 0.0
        for a in range(c * CHUNK, (c + 1) * CHUNK):
            s += np.float64(p[a])
        chunks[c] = s
    if full < chunks.shape[0]:
        s = 0.0
        for a in range(full * CHUNK, num_actions):
            s += np.float64(p[a])
        chunks[full] = s
    per_block = BLOCK // CHUNK
    total = 0.0
    for b in range(blocks.shape[0]):
        s = 0.0
        for c in range(b * per_block, min(chunks.shape[0], (b + 1) * per_block)):
            s += chunks[c]
        blocks[b] = s
        total += s
    return total


@numba.njit(cache=True, nogil=True, fastmath=True)
def _correct_metrics(p: np.ndarray, p0: np.ndarray) -> tuple[float, float, float]:
    """(sum p, sum max(0, p0 - p), sum p0) over the correct actions."""
    q = 0.0
    lost = 0.0
    initial = 0.0
    for a in range(p0.shape[0]):
        pa = np.float64(p[a])
        pa0 = np.float64(p0[a])
        q += pa
        initial += pa0
        lost += max(pa0 - pa, 0.0)
    return q, lost, initial


@numba.njit(cache=True, nogil=True)
def _last_positive(p: np.ndarray, start: int, stop: int) -> int:
    a = stop - 1
    while a > start and p[a] <= 0.0:
        a -= 1
    return a


@numba.njit(cache=True, nogil=True)
def _take(a: int, pa: float, num_correct: int, draws_row: np.ndarray, e: np.ndarray, scale: float, acc: np.ndarray):
    """Record action ``a`` for the current target and move to the next sorted uniform.

    ``acc`` = [draws so far, correct draws, sum of p over correct / over wrong draws, cumulative
    spacing, current target]."""
    j = int(acc[0])
    draws_row[j] = a
    if a < num_correct:
        acc[1] += 1.0
        acc[2] += pa
    else:
        acc[3] += pa
    j += 1
    acc[0] = j
    if j < draws_row.shape[0]:
        acc[4] += e[j]
        acc[5] = acc[4] * scale


@numba.njit(cache=True, nogil=True)
def measure_and_draw(
    probs: np.ndarray,  # (R, |A|) current policy
    initial_correct: np.ndarray,  # (R, K) pi_0 over the correct actions
    spacings: np.ndarray,  # (R, N + 1) i.i.d. standard exponentials, or (R, 0) to only measure
    draws: np.ndarray,  # (R, N) int64 out: drawn actions, ascending
    stats: np.ndarray,  # (R, NUM_STATS) float64 out
) -> None:
    runs, num_actions = probs.shape
    num_correct = initial_correct.shape[1]
    group_size = spacings.shape[1] - 1
    blocks = (num_actions + BLOCK - 1) // BLOCK
    block_mass = np.empty(blocks)
    chunk_mass = np.empty((num_actions + CHUNK - 1) // CHUNK)
    acc = np.zeros(6)
    for r in range(runs):
        p = probs[r]
        # Metrics: Q_pos, M_ret = 1 - sum max(0, p0 - p) / sum p0 over the correct actions, anchor p.
        q, lost, initial = _correct_metrics(p, initial_correct[r])
        stats[r, Q_POS] = q
        stats[r, M_RET] = 1.0 - lost / initial
        stats[r, ANCHOR] = p[0]
        if group_size < 1:
            continue
        # Block masses, and their total (softmax output in float32 does not sum to exactly 1).
        total = _chunk_masses(p, chunk_mass, block_mass)
        # Sorted uniforms on [0, total): cumulative exponential spacings.
        e = spacings[r]
        norm = 0.0
        for j in range(group_size + 1):
            norm += e[j]
        scale = total / norm
        acc[:] = 0.0
        acc[4] = e[0]
        acc[5] = e[0] * scale
        row = draws[r]
        below = 0.0  # mass of the blocks already passed
        # Walk blocks -> chunks -> actions, entering only those that hold the next target.  Sums at
        # each level are computed separately and can differ in the last bits: a target that falls in
        # between belongs to the last action with positive mass of the block or chunk (bias ~1e-16).
        for b in range(blocks):
            if acc[0] >= group_size:
                break
            mass = block_mass[b]
            if acc[5] < below + mass:
                end = min(num_actions, (b + 1) * BLOCK)
                inside = below
                for c in range(b * BLOCK, end, CHUNK):
                    stop = min(end, c + CHUNK)
                    chunk = chunk_mass[c // CHUNK]
                    if acc[5] < inside + chunk:
                        running = inside
                        target = acc[5]  # a local, so the scan below needs no loads from acc
                        for a in range(c, stop):
                            pa = np.float64(p[a])
                            running += pa
                            if target < running:
                                while acc[0] < group_size and acc[5] < running:
                                    _take(a, pa, num_correct, row, e, scale, acc)
                                target = acc[5] if acc[0] < group_size else np.inf
                        if acc[0] < group_size and acc[5] < inside + chunk:
                            a = _last_positive(p, c, stop)
                            while acc[0] < group_size and acc[5] < inside + chunk:
                                _take(a, np.float64(p[a]), num_correct, row, e, scale, acc)
                    inside += chunk
                    if acc[0] >= group_size:
                        break
                if acc[0] < group_size and acc[5] < below + mass:
                    a = _last_positive(p, b * BLOCK, end)
                    while acc[0] < group_size and acc[5] < below + mass:
                        _take(a, np.float64(p[a]), num_correct, row, e, scale, acc)
            below += mass
        if acc[0] < group_size:  # targets a hair above the total
            a = _last_positive(p, 0, num_actions)
            while acc[0] < group_size:
                _take(a, np.float64(p[a]), num_correct, row, e, scale, acc)
        stats[r, NUM_CORRECT_DRAWS] = acc[1]
        stats[r, P_CORRECT_DRAWS] = acc[2]
        stats[r, P_WRONG_DRAWS] = acc[3]


@numba.njit(cache=True, nogil=True)
def write_gradient(
    probs: np.ndarray,  # (R, |A|)
    draws: np.ndarray,  # (R, N) ascending actions
    stale: np.ndarray,  # (R, M) actions where ``out`` may be nonzero (logprob); ignored for prob
    coef_correct: np.ndarray,  # (R,) g / N * (R_c - R_w) * (1 - mu_hat)
    coef_wrong: np.ndarray,  # (R,) -g / N * (R_c - R_w) * mu_hat
    num_correct: int,
    prob_objective: bool,
    out: np.ndarray,  # (R, |A|) -dL/dz, the gradient AdamW minimises
) -> None:
    runs, num_actions = probs.shape
    group_size = draws.shape[1]
    for r in range(runs):
        p = probs[r]
        o = out[r]
        cc = coef_correct[r]
        cw = coef_wrong[r]
        if prob_objective:
            # <c, p> = sum_j coef(a_j) p(a_j); -dL/dz = p * <c, p> everywhere, minus p_a * c_a at drawn a.
            inner = 0.0
            for j in range(group_size):
                a = draws[r, j]
                inner += (cc if a < num_correct else cw) * np.float64(p[a])
            for a in range(num_actions):
                o[a] = np.float64(p[a]) * inner
        else:
            for j in range(stale.shape[1]):  # O(N) clearing: only last step's draws are nonzero
                o[stale[r, j]] = 0.0
            inner = 0.0
        j = 0
        while j < group_size:  # runs of equal actions (draws are sorted): c_a = n_a * coef(a)
            a = draws[r, j]
            n_a = 0
            while j < group_size and draws[r, j] == a:
                n_a += 1
                j += 1
            c = n_a * (cc if a < num_correct else cw)
            if prob_objective:
                o[a] = np.float64(p[a]) * (inner - c)
            else:
                o[a] = -c
