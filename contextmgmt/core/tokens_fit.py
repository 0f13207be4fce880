"""Fitting class weights to (class counts, real tokens) samples, in plain Python.

Used offline (``bench/token_fit.py`` fits ``tokens.BASE_WEIGHTS`` against o200k_base) and
online (``contextmgmt.calibration`` refits a model's weights from its usage reports). The
problem is small (a couple of dozen weights, at most a few hundred samples), so a
bounded least-squares solve by coordinate descent on the normal equations is enough.

Errors are relative: a sample of 100 tokens off by 10 weighs as much as one of 10,000 off
by 1,000, so that short and long requests count alike.
"""

from __future__ import annotations

from collections.abc import Sequence

Sample = tuple[Sequence[float], float]  # (class counts, real tokens)


def fit_weights(
    samples: Sequence[Sample],
    *,
    lower: Sequence[float],
    upper: Sequence[float] | None = None,
    prior: Sequence[float] | None = None,
    prior_strength: float | Sequence[float] = 0.0,
    sample_weights: Sequence[float] | None = None,
    relative_prior: bool = False,
    sweeps: int = 400,
) -> list[float]:
    """Weights ``w`` minimising sum_i v_i (x_i . w / y_i - 1)^2 + penalty, within bounds.

    ``prior`` with ``prior_strength`` > 0 (one for all classes, or one per class) adds
    strength_j * A_jj * (w_j - prior_j)^2, A_jj being how much the samples say about class
    j: a ridge that scales with the evidence, so that a class the samples barely contain
    stays near its prior, and one they do not contain at all keeps it.

    With ``relative_prior`` the penalty is instead strength_j * n * ((w_j - prior_j) /
    prior_j)^2 (n samples): moving any weight by the same fraction costs the same, so the
    fit explains an error by the classes that make up most of the samples rather than by
    rare ones (correlated classes otherwise trade weight freely).
    """
    m = len(lower)
    hi = list(upper) if upper is not None else [float("inf")] * m
    a = [[0.0] * m for _ in range(m)]
    b = [0.0] * m
    for k, (counts, real) in enumerate(samples):
        if real <= 0:
            continue
        v = sample_weights[k] if sample_weights is not None else 1.0
        x = [c / real for c in counts]
        nz = [j for j in range(m) if x[j]]
        for j in nz:
            xj = v * x[j]
            b[j] += xj
            row = a[j]
            for i in nz:
                row[i] += xj * x[i]
    start = list(prior) if prior is not None else [max(lo, 0.0) for lo in lower]
    strengths = (
        [float(prior_strength)] * m
        if isinstance(prior_strength, int | float)
        else [float(s) for s in prior_strength]
    )
    if prior is not None:
        n = sum(1 for _, real in samples if real > 0)
        for j in range(m):
            if strengths[j] <= 0:
                continue
            if relative_prior:
                s = strengths[j] * n / max(prior[j], 0.05) ** 2
            else:
                # A class absent from the samples keeps its prior exactly.
                s = strengths[j] * (a[j][j] + 1e-9)
            a[j][j] += s
            b[j] += s * prior[j]
    w = [min(max(start[j], lower[j]), hi[j]) for j in range(m)]
    for _ in range(sweeps):
        moved = 0.0
        for j in range(m):
            if a[j][j] <= 0:
                continue
            row = a[j]
            r = b[j] - sum(row[i] * w[i] for i in range(m) if i != j)
            new = min(max(r / row[j], lower[j]), hi[j])
            moved = max(moved, abs(new - w[j]))
            w[j] = new
        if moved < 1e-7:
            break
    return w
