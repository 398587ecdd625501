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


def mass_buffers(runs: int, num_actions: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-run chunk and block sums of pi (the sampler's index), as measure_and_draw takes them."""
    return np.empty((runs, -(-num_actions // CHUNK))), np.empty((runs, -(-num_actions // BLOCK)))


@numba.njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
def _block_masses(chunks: np.ndarray, blocks: np.ndarray) -> float:
    """Block sums from chunk sums, and the total."""
    per_block = BLOCK // CHUNK
    total = 0.0
    for b in range(blocks.shape[0]):
        s = 0.0
        for c in range(b * per_block, min(chunks.shape[0], (b + 1) * per_block)):
            s += chunks[c]
        blocks[b] = s
        total += s
    return total


@numba.njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
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
    return _block_masses(chunks, blocks)


@numba.njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
def _scale_and_masses(e: np.ndarray, factor: np.float32, chunks: np.ndarray, blocks: np.ndarray) -> float:
    """e <- e * factor, with :func:`_chunk_masses` of the result from the same pass."""
    num_actions = e.shape[0]
    full = num_actions // CHUNK
    for c in range(full):
        s = 0.0
        for a in range(c * CHUNK, (c + 1) * CHUNK):
            v = e[a] * factor
            e[a] = v
            s += np.float64(v)
        chunks[c] = s
    if full < chunks.shape[0]:
        s = 0.0
        for a in range(full * CHUNK, num_actions):
            v = e[a] * factor
            e[a] = v
            s += np.float64(v)
        chunks[full] = s
    return _block_masses(chunks, blocks)


@numba.njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
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
    chunk_masses: np.ndarray,  # (R, ceil(|A| / CHUNK)) float64: sums of probs per chunk ...
    block_masses: np.ndarray,  # (R, ceil(|A| / BLOCK)) float64: ... and per block
    masses_ready: bool,  # True: the two above already hold the sums of ``probs``; False: computed here
) -> None:
    runs, num_actions = probs.shape
    num_correct = initial_correct.shape[1]
    group_size = spacings.shape[1] - 1
    blocks = block_masses.shape[1]
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
        chunk_mass, block_mass = chunk_masses[r], block_masses[r]
        if masses_ready:
            total = 0.0
            for b in range(blocks):
                total += block_mass[b]
        else:
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
                                if target >= inside + chunk:  # no further target in this chunk
                                    break
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


# float32 exp(x) for the softmax below (Cephes expf: x = k ln2 + r, |r| <= ln2 / 2, degree-7 polynomial,
# 2^k put into the exponent bits).  np.exp does not vectorise in numba without Intel's SVML; this loop
# does, and it is 10x faster.  Measured against float64 exp: relative error <= 3e-7 (a few float32 ulps).
_LOG2E = np.float32(1.44269504088896341)
_LN2_HI = np.float32(0.693359375)  # ln 2 = _LN2_HI + _LN2_LO, _LN2_HI exact in 9 bits
_LN2_LO = np.float32(-2.12194440e-4)
_EXP_P = (
    np.float32(1.9875691500e-4),
    np.float32(1.3981999507e-3),
    np.float32(8.3334519073e-3),
    np.float32(4.1665795894e-2),
    np.float32(1.6666665459e-1),
    np.float32(5.0000001201e-1),
)
_EXP_FLOOR = np.float32(-86.0)  # below this exp is taken as 0 (< 5e-38; 2^k stays a normal float)
_OVERFLOW_MARGIN = 60.0  # logits may rise this far above the reference before exp is recomputed


@numba.njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
def _exp_parts(z: np.ndarray, shift: np.float32, e: np.ndarray, bits: np.ndarray) -> None:
    """exp(z - shift) = poly(r) * 2^k: writes poly(r) (0 below the floor) to ``e`` and k << 23 to ``bits``."""
    p0, p1, p2, p3, p4, p5 = _EXP_P
    for i in range(z.shape[0]):
        x = z[i] - shift
        xc = max(x, _EXP_FLOOR)
        k = np.floor(xc * _LOG2E + np.float32(0.5))
        r = xc - k * _LN2_HI - k * _LN2_LO
        poly = (((((p0 * r + p1) * r + p2) * r + p3) * r + p4) * r + p5) * (r * r) + r + np.float32(1.0)
        bits[i] = np.int32(k) << 23
        e[i] = poly if x > _EXP_FLOOR else np.float32(0.0)


@numba.njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
def _exp_sum(e: np.ndarray, bits: np.ndarray) -> float:
    """Put the exponents into ``e`` (poly * 2^k) and return sum(e)."""
    ei = e.view(np.int32)
    for i in range(e.shape[0]):
        if ei[i] != 0:
            ei[i] += bits[i]
    total = 0.0
    for i in range(e.shape[0]):
        total += np.float64(e[i])
    return total


@numba.njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
def _adamw(z, m, v, g, decay, w1, b2, w2, step_size, bc2_sqrt, eps):
    """torch's fused AdamW update (adamw mode), element-wise in float32; a loop of its own so it vectorises."""
    for i in range(z.shape[0]):
        gi = g[i]
        mi = m[i] + w1 * (gi - m[i])
        vi = b2 * v[i] + w2 * gi * gi
        m[i] = mi
        v[i] = vi
        z[i] = z[i] * decay - step_size * mi / (np.sqrt(vi) / bc2_sqrt + eps)


_SUM_LOW, _SUM_HIGH = np.exp(-20.0), np.exp(60.0)  # sum of exp(z - shift) outside: take the true max


@numba.njit(cache=True, nogil=True, error_model="numpy")
def adamw_then_softmax(
    logits: np.ndarray,  # (R, |A|) float32, updated in place
    exp_avg: np.ndarray,  # (R, |A|) float32 AdamW first moment
    exp_avg_sq: np.ndarray,  # (R, |A|) float32 AdamW second moment
    grad: np.ndarray,  # (R, |A|) float32
    probs: np.ndarray,  # (R, |A|) float32 out: softmax of the updated logits
    shift: np.ndarray,  # (R,) float64: the logit exp is taken against; refreshed to the max when needed
    bits: np.ndarray,  # (|A|,) int32 scratch (allocating 512 KB per call costs page faults)
    chunk_masses: np.ndarray,  # (R, ceil(|A| / CHUNK)) float64 out: chunk sums of the new probs (sampler)
    block_masses: np.ndarray,  # (R, ceil(|A| / BLOCK)) float64 out: block sums of the new probs
    step: int,  # AdamW step count after this update (1 on the first)
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    weight_decay: float,
) -> None:
    """One AdamW update (torch's fused AdamW arithmetic, in float32) and the softmax of the new logits.

    Softmax is shift-invariant, so exp is taken against a logit near the max kept from earlier
    steps, which saves a max pass.  If the sum of exp(z - shift) leaves [e^-20, e^60] (a logit rose
    far above the shift, or all fell far below it), exp is redone against the true max.
    """
    runs = logits.shape[0]
    step_size = np.float32(lr / (1.0 - beta1**step))
    bc2_sqrt = np.float32(np.sqrt(1.0 - beta2**step))
    decay = np.float32(1.0 - lr * weight_decay)
    w1, b2, w2 = np.float32(1.0 - beta1), np.float32(beta2), np.float32(1.0 - beta2)
    for r in range(runs):
        z, e = logits[r], probs[r]
        _adamw(z, exp_avg[r], exp_avg_sq[r], grad[r], decay, w1, b2, w2, step_size, bc2_sqrt, np.float32(eps))
        _exp_parts(z, np.float32(shift[r]), e, bits)
        total = _exp_sum(e, bits)
        if not (_SUM_LOW <= total <= _SUM_HIGH):
            shift[r] = z.max()
            _exp_parts(z, np.float32(shift[r]), e, bits)
            total = _exp_sum(e, bits)
        _scale_and_masses(e, np.float32(1.0 / total), chunk_masses[r], block_masses[r])
