#!/usr/bin/env python3
"""Checks of the mini-batch MLP reference (no pytest needed).

    python3 benches/numpy/test_mlp_numpy.py

Exits nonzero on failure. Takes a few seconds.

1. The analytic gradient (backpropagation, prior included) against central finite
   differences of the loss, in float64, for softmax regression and a 2-hidden-layer MLP.
2. The vectorized step against a plain loop-per-chain transcription (separate W_l and
   b_l, explicit bias add and bias-gradient sum, max(z, 0), log-sum-exp) fed the same
   batch indices, in float64: parameters, momenta and energies after a few steps.
3. With full batches (no mini-batch noise) and small step sizes the loss goes down,
   step after step (so the update has the right sign).
4. The FLOP formula against a count from the layer shapes, and against the products
   the code actually makes (counted by wrapping mlp_numpy.matmul).
5. Smoke: run() in float32 and float64, with one and two threads, gives finite figures.
"""

import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mlp_numpy as mm  # noqa: E402

FAILURES = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILURES.append(what)


def make_model(n, f, c, hidden, e, p, batch, seed, sigma=0.7, eta_min=1e-3, eta_max=1e-2,
               momentum=mm.MOMENTUM, dtype="float64", random_bias=True):
    rng = np.random.default_rng(seed)
    x, y = mm.make_data(n, f, c, rng)
    m = mm.MLPChains(x, y, c, hidden, e, p, batch, sigma, eta_min, eta_max, momentum,
                     dtype, rng)
    if random_bias:  # exercise the bias paths (they start at 0)
        for w1 in m.w1:
            w1[:, -1, :] = 0.3 * rng.standard_normal(w1[:, -1, :].shape)
    return m, x, y


# ---- 1. gradient against finite differences -------------------------------------------
def test_gradient_fd():
    # Central differences with h = 1e-5 in float64: truncation error ~ h^2 |L'''| and
    # rounding error ~ eps |L| / h ~ 1e-11 |L|, both far below 1e-6 of |grad L| here
    # (|L| ~ 1e2, |grad L| ~ 1e1..1e2). So a relative error (norm of the difference over
    # the norm of the gradient, per chain) under 1e-6 leaves three orders of margin,
    # while any wrong term (a missing N/B, bias or prior gradient, a transposition, a
    # wrong ReLU mask) gives an O(1) error. A ReLU kink within h of a pre-activation
    # would spoil one component (about 1e-5 likely per pre-activation and component);
    # the seeds are fixed and these cross none.
    h = 1e-5
    for hidden, tag in (([], "softmax regression"), ([7, 6], "MLP [5, 7, 6, 4]")):
        m, _, _ = make_model(n=30, f=5, c=4, hidden=hidden, e=2, p=3, batch=8, seed=3)
        idx = m.draw()[0]
        g = m.gradient(idx)
        fd = np.empty_like(g)
        for j in range(m.dim):
            keep = m.theta[:, j].copy()
            m.theta[:, j] = keep + h
            up = m.energy(idx).copy()
            m.theta[:, j] = keep - h
            down = m.energy(idx).copy()
            m.theta[:, j] = keep
            fd[:, j] = (up - down) / (2 * h)
        rel = np.linalg.norm(g - fd, axis=1) / np.linalg.norm(fd, axis=1)
        check(rel.max() < 1e-6, f"{tag}: gradient vs central differences, D = {m.dim}, "
              f"max relative error {rel.max():.1e} < 1e-6")
        check(np.all(np.isfinite(g)), f"{tag}: gradient finite")


# ---- 2. vectorized step against a loop per chain ----------------------------------------
def loop_reference(params, x, y, idx_g, idx_e, sizes, e, p, n, batch, sigma, eta_min,
                   eta_max, mu, steps):
    """params[c] = [(W_l, b_l), ...]; returns (params, momenta, energies) after steps."""
    k = e * p
    params = [[(w.copy(), b.copy()) for w, b in pc] for pc in params]
    moms = [[(np.zeros_like(w), np.zeros_like(b)) for w, b in pc] for pc in params]
    scale = n / batch
    energies = np.zeros(k)

    def forward(pc, xs):
        acts, zs = [xs], []
        a = xs
        for l, (w, b) in enumerate(pc):
            z = a @ w + b
            zs.append(z)
            a = np.maximum(z, 0.0) if l < len(pc) - 1 else z
            acts.append(a)
        return acts, zs

    def loss(pc, ids):
        xs, ys = x[ids], y[ids]
        acts, _ = forward(pc, xs)
        total = 0.0
        for i in range(len(ids)):
            z = acts[-1][i]
            zmax = z.max()
            total += zmax + math.log(np.exp(z - zmax).sum()) - z[ys[i]]
        prior = sum((w * w).sum() + (b * b).sum() for w, b in pc)
        return scale * total + prior / (2 * sigma ** 2)

    for s in range(steps):
        for c in range(k):
            level = c % p
            eta = eta_min * (eta_max / eta_min) ** (level / (p - 1))
            pc = params[c]
            ids = idx_g[s, c]
            xs, ys = x[ids], y[ids]
            acts, zs = forward(pc, xs)
            dz = np.zeros_like(acts[-1])
            for i in range(batch):
                z = acts[-1][i]
                pr = np.exp(z - z.max())
                pr /= pr.sum()
                pr[ys[i]] -= 1.0
                dz[i] = scale * pr
            grads = [None] * len(pc)
            for l in range(len(pc) - 1, -1, -1):
                w, b = pc[l]
                gw = acts[l].T @ dz + w / sigma ** 2
                gb = dz.sum(axis=0) + b / sigma ** 2
                grads[l] = (gw, gb)
                if l > 0:
                    dz = (dz @ w.T) * (zs[l - 1] > 0)
            for l in range(len(pc)):
                (w, b), (vw, vb), (gw, gb) = pc[l], moms[c][l], grads[l]
                vw = mu * vw - eta * gw
                vb = mu * vb - eta * gb
                moms[c][l] = (vw, vb)
                pc[l] = (w + vw, b + vb)
            energies[c] = loss(pc, idx_e[s, c])
    return params, moms, energies


def test_against_loop():
    steps = 4
    for hidden in ([], [7], [7, 6]):
        e, p, n, batch, sigma = 2, 3, 40, 8, 0.7
        m, x, y = make_model(n=n, f=5, c=4, hidden=hidden, e=e, p=p, batch=batch, seed=11,
                             sigma=sigma)
        params = [[(m.w[l][c].copy(), m.w1[l][c, -1, :].copy()) for l in range(len(m.w))]
                  for c in range(m.k)]
        draws = np.array([m.draw() for _ in range(steps)])  # (steps, 2, k, B)
        for s in range(steps):
            m.step(draws[s, 0], draws[s, 1])
        ref, moms, ref_e = loop_reference(params, x.astype(np.float64), y, draws[:, 0],
                                          draws[:, 1], m.sizes, e, p, n, batch, sigma,
                                          1e-3, 1e-2, mm.MOMENTUM, steps)
        tag = f"layers {m.sizes}"
        ok_w = ok_v = True
        for l in range(len(m.w)):
            w, b = m.layer_params(l)
            vw = m.v[:, m.offsets[l]:m.offsets[l + 1]].reshape(m.w1[l].shape)
            for c in range(m.k):
                ok_w &= np.allclose(w[c], ref[c][l][0], rtol=1e-10, atol=1e-10)
                ok_w &= np.allclose(b[c], ref[c][l][1], rtol=1e-10, atol=1e-10)
                ok_v &= np.allclose(vw[c, :-1], moms[c][l][0], rtol=1e-10, atol=1e-10)
                ok_v &= np.allclose(vw[c, -1], moms[c][l][1], rtol=1e-10, atol=1e-10)
        moved = max(np.abs(m.layer_params(l)[0] - np.array([pc[l][0] for pc in params])).max()
                    for l in range(len(m.w)))
        check(ok_w and moved > 1e-3,
              f"{tag}: parameters after {steps} steps equal the loop's to 1e-10 "
              f"(they moved by up to {moved:.2g})")
        check(ok_v, f"{tag}: momenta equal the loop's to 1e-10")
        check(np.allclose(m.energies, ref_e, rtol=1e-10, atol=1e-10),
              f"{tag}: energies equal the loop's to 1e-10")


# ---- 3. the loss decreases without noise --------------------------------------------------
def test_loss_decreases():
    # Full batches (B = N, every chain the whole data set) remove the mini-batch noise.
    # Plain gradient descent with small steps decreases the loss at every step; heavy-ball
    # momentum overshoots and oscillates once it has built up speed, so for it only the
    # first steps and the end point are checked.
    n = 120
    for mu, tag in ((0.0, "plain SGD"), (mm.MOMENTUM, "momentum 0.9")):
        m, _, _ = make_model(n=n, f=8, c=3, hidden=[16], e=2, p=4, batch=n, seed=5,
                             sigma=1.0, eta_min=1e-4, eta_max=1e-3, momentum=mu)
        full = np.tile(np.arange(n), (m.k, 1))  # the whole data set: exact gradient
        losses = [m.energy(full).copy()]
        for _ in range(30):
            losses.append(m.step(full, full).copy())
        losses = np.array(losses)  # (31, k)
        diffs = np.diff(losses, axis=0)
        what = (f"{tag}, full batch, eta 1e-4..1e-3, 30 steps, {m.k} chains: loss "
                f"{losses[0].mean():.1f} -> {losses[-1].mean():.1f} (mean)")
        if mu == 0.0:
            check(np.all(diffs < 0), what + ", decreasing at every step of every chain")
        else:
            check(np.all(diffs[:2] < 0) and np.all(losses[-1] < losses[0] - 1.0),
                  what + ", decreasing over the first 2 steps and lower at the end, "
                  "every chain")


# ---- 4. FLOPs ----------------------------------------------------------------------------
def flops_from_shapes(sizes, batch):
    """Counts the products layer by layer: forward (gradient and energy batches),
    weight gradient of every layer, input gradient of every layer but the first."""
    total = 0
    for l, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        mac = batch * a * b
        total += 2 * mac  # gradient forward
        total += 2 * mac  # weight gradient
        if l > 0:
            total += 2 * mac  # input gradient
        total += 2 * mac  # energy forward
    return total


def test_flops():
    for sizes, batch in (([64, 128, 10], 64), ([64, 10], 64), ([5, 7, 6, 4], 8),
                         ([64, 256, 128, 10], 32)):
        check(mm.flops_per_chain_step(sizes, batch) == flops_from_shapes(sizes, batch),
              f"layers {sizes}, B = {batch}: formula = count from shapes "
              f"({mm.flops_per_chain_step(sizes, batch)})")
    check(mm.flops_per_chain_step([64, 128, 10], 64) == 3801088,
          "defaults: 3,801,088 FLOPs per chain-step")
    # The products actually made. They carry the bias (the ones column), which the
    # formula leaves out: per layer 2*B*out in each forward and in the weight gradient,
    # and 2*B*out in the input gradient of layers after the first (its extra column).
    for sizes, batch in (([64, 128, 10], 64), ([5, 7, 6, 4], 8), ([6, 3], 4)):
        made = []

        def counting(a, b, out, _made=made):
            _made.append(2 * np.prod(a.shape[:-2]) * a.shape[-2] * a.shape[-1] * b.shape[-1])
            return np.matmul(a, b, out=out)

        m, _, _ = make_model(n=50, f=sizes[0], c=sizes[-1], hidden=sizes[1:-1], e=1, p=2,
                             batch=batch, seed=1, dtype="float32")
        saved, mm.matmul = mm.matmul, counting
        try:
            m.iterate()
        finally:
            mm.matmul = saved
        per_chain = sum(made) // m.k
        outs = sizes[1:]
        bias = 2 * batch * (3 * sum(outs) + sum(outs[1:]))
        check(per_chain == mm.flops_per_chain_step(sizes, batch) + bias,
              f"layers {sizes}, B = {batch}: products made = formula + bias work "
              f"({per_chain} = {mm.flops_per_chain_step(sizes, batch)} + {bias})")


# ---- 5. smoke ---------------------------------------------------------------------------
def test_smoke():
    check(mm.parse_hidden("") == [] and mm.parse_hidden("0") == []
          and mm.parse_hidden("128") == [128] and mm.parse_hidden("32,16") == [32, 16],
          "parse_hidden")
    for dtype, threads, hidden in (("float32", 1, (128,)), ("float64", 1, (32, 16)),
                                   ("float32", 2, ()), ):
        r = mm.run(ensembles=2, chains=4, iters=5, warmup=1, hidden=hidden, dtype=dtype,
                   threads=threads)
        ok = (r["chain_steps"] == 2 * 4 * 5 and math.isfinite(r["energy_mean"])
              and r["chain_steps_per_sec"] > 0
              and abs(r["gflops"] - r["chain_steps_per_sec"] * r["flops_per_chain_step"] / 1e9)
              < 1e-9 * r["gflops"]
              and r["examples_per_sec"] == r["chain_steps_per_sec"] * 2 * 64)
        check(ok, f"run(): {dtype}, {threads} thread(s), hidden {list(hidden)}: finite, "
              "consistent rates")
    m, _, _ = make_model(n=50, f=4, c=3, hidden=[5], e=1, p=2, batch=4, seed=2,
                         dtype="float32")
    m.iterate()
    check(m.theta.dtype == np.float32 and m.energies.dtype == np.float32
          and m.xb.dtype == np.float32, "float32 end to end")


def main():
    t0 = time.perf_counter()
    test_gradient_fd()
    test_against_loop()
    test_loss_decreases()
    test_flops()
    test_smoke()
    print(f"{len(FAILURES)} failure(s), {time.perf_counter() - t0:.1f} s")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
