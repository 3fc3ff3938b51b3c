#!/usr/bin/env python3
"""Vectorized NumPy reference for the mini-batch step of momentum-SGD chains on a Bayesian MLP.

The speed reference of the Rust engine on data targets: E ensembles of P chains
(E*P chains in all), each with its own parameters theta of an MLP classifier with
layer sizes [F, H_1, ..., H_d, C] (ReLU hidden layers, softmax output; no hidden
layer is softmax regression), W_l (in x out) ~ N(0, 1/in) and b_l = 0 at the start.

One iteration (one chain-step for every chain), for every chain c independently:

1. draw a mini-batch of B example indices uniformly with replacement (all chains and
   both batches of the iteration come from one ``rng.integers(0, N, (2, E*P, B))``
   call of numpy's default Generator; the first half is the gradient batch);
2. forward pass and backpropagation of
   ``L(theta) = N/B * sum_{i in batch} -log softmax(f_theta(x_i))[y_i] + |theta|^2 / (2 sigma^2)``
   (stable log-softmax; the prior's gradient is theta / sigma^2);
3. momentum SGD ``v <- mu v - eta_c grad L; theta <- theta + v`` with mu = 0.9 and eta_c
   from the geometric ladder of P rates between --eta-min and --eta-max (the same in
   every ensemble);
4. the stochastic energy L at the new theta on a fresh mini-batch (the second half of
   the draw): forward pass and loss only.

Swaps between chains, ladder adaptation and book-keeping cost O(E*P) per iteration,
negligible beside the O(E*P*B*M) passes, and are left out. The Rust engine's target
level also adds Langevin noise (one normal per parameter of E of the E*P chains);
this reference times plain momentum SGD (T = 0 at every level) and leaves it out.

FLOPs per chain-step (multiply-adds of the matrix products counted as 2; bias,
activation, softmax, loss and update work not counted), with M = sum_l in_l * out_l:

    2*B*M            forward pass of the gradient batch
  + 4*B*M - 2*B*F*H_1  backward pass: weight gradients (2*B*M) and input gradients
                     (2*B*M), less the first layer's input gradient (not computed)
  + 2*B*M            forward pass of the energy batch
  = 8*B*M - 2*B*F*H_1  (H_1 = C for softmax regression)

How it is made fast (a fair, competent NumPy program, not a strawman):

* all E*P chains at once: every layer is one batched ``np.matmul`` of stacked
  (chains, batch, in) x (chains, in, out) arrays, which numpy runs as one BLAS sgemm/dgemm
  per chain without copies when every operand is a strided view with unit inner stride
  (transposed operands are passed to BLAS as transposed, not copied). ``np.einsum``
  was measured in its place on the whole step (defaults, float32, 2026-11-30) and is
  slower: about 10x without ``optimize`` (it does not call BLAS: 1.2e3 against
  1.1e4-1.4e4 chain-steps/s) and 1.2-1.4x with ``optimize=True`` (it ends up in
  matmul with more overhead: 9.5e3). So: matmul. The only Python loops are over
  iterations and layers;
* every product is laid out so that BLAS never gets the one slow orientation: with
  only its second operand transposed ("NT"), OpenBLAS ran these shapes at 55-76 GFLOP/s
  against 75-112 for NN, TN and TT (one thread); hence the transposed logits and, with two or more
  hidden layers, a transposed copy of each hidden delta that feeds an input gradient
  (see data_gradient);
* biases ride in the matrix products: each chain's parameters are one flat row of
  theta, each layer an (in + 1) x out block whose last row is b_l, and every layer
  input carries a constant column of ones (set once), so the forward product adds the
  bias and the weight-gradient product yields the bias gradient, with no separate
  broadcast add or reduction; the products write straight into the flat gradient row
  and into the next layer's input buffer (``out=`` views);
* the backward pass is linear in its seed, so it is seeded with N/B * eta_c * (softmax
  - onehot) and yields eta_c * grad directly; the update is then five in-place passes
  over theta and v;
* the logits are kept transposed, (chains, C, B), so that the max and the sum over the
  C classes run element-wise over contiguous rows (reducing a short last axis is slow
  in numpy); ReLU is z * 1[z > 0] over whole contiguous buffers, the mask kept as ReLU';
* all work arrays are preallocated; element-wise work is in place through ``out=``;
  the batch gather is one ``np.take(..., out=, mode="clip")`` from the data with its
  ones column;
* float32 by default (like the f32 engine), float64 with ``--dtype float64``;
* numpy's element-wise work is single-threaded, and OpenBLAS gains nothing from its
  threads on these small products (measured: same rate with 1 or 2 BLAS threads), so
  one program uses one core. ``--threads T`` splits the ensembles into T groups, each
  run by its own Python thread with a one-thread BLAS (numpy releases the GIL in BLAS,
  ufunc loops, take and the generator): the way to use T cores from NumPy.

The products also carry the bias (the ones column): 2*B*(3*sum_l out_l + sum_{l>1}
out_l) more FLOPs per chain-step (1.4 % for the defaults), not counted.

Usage:
    python3 benches/numpy/mlp_numpy.py --ensembles 8 --chains 8 --iters 200 --json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import threading
import time

import numpy as np

MOMENTUM = 0.9

# The batched matrix product. A module-level name so that the checks can count the
# FLOPs of the products actually made (test_mlp_numpy.py).
matmul = np.matmul


def parse_hidden(text):
    """'128' -> [128]; '128,64' -> [128, 64]; '' or '0' -> [] (softmax regression)."""
    text = text.strip()
    if text in ("", "0"):
        return []
    sizes = [int(t) for t in text.split(",") if t.strip()]
    if any(h <= 0 for h in sizes):
        raise ValueError(f"hidden sizes must be positive: {text!r}")
    return sizes


def flops_per_chain_step(sizes, batch):
    """8*B*M - 2*B*F*H_1 with M = sum_l in_l*out_l (see the module docstring)."""
    m = sum(a * b for a, b in zip(sizes[:-1], sizes[1:]))
    return 8 * batch * m - 2 * batch * sizes[0] * sizes[1]


FLOPS_FORMULA = ("2*B*M (gradient forward) + 4*B*M - 2*B*F*H_1 (backward: weight and input "
                 "gradients, no input gradient for layer 1) + 2*B*M (energy forward) "
                 "= 8*B*M - 2*B*F*H_1, M = sum_l in_l*out_l, H_1 = first layer's output size")


def make_data(examples, features, classes, rng):
    """float32 inputs uniform in [0, 1) and integer labels in 0..classes-1."""
    x = rng.random((examples, features), dtype=np.float32)
    y = rng.integers(0, classes, size=examples)
    return x, y


def geometric_ladder(chains, eta_min, eta_max):
    if chains == 1:
        return np.array([eta_min])
    return np.array([eta_min * (eta_max / eta_min) ** (p / (chains - 1)) for p in range(chains)])


class MLPChains:
    """E*P momentum-SGD chains of one MLP on one data set; chain e*P + p is level p of
    ensemble e. theta and v are (E*P, D) arrays, D = sum_l (in_l + 1) * out_l."""

    def __init__(self, x, y, classes, hidden, ensembles, chains, batch, prior_sigma=1.0,
                 eta_min=1e-5, eta_max=1e-4, momentum=MOMENTUM, dtype="float32", rng=None):
        dt = np.dtype(dtype)
        rng = np.random.default_rng(0) if rng is None else rng
        n, f = x.shape
        self.sizes = sizes = [f, *hidden, classes]
        self.n, self.batch, self.dtype = n, batch, dt
        self.k = k = ensembles * chains
        self.rng = rng
        self.momentum = dt.type(momentum)
        self.scale = dt.type(n / batch)  # N/B

        # Data with its ones column (the bias input), in the working dtype.
        self.x1 = np.ones((n, f + 1), dtype=dt)
        self.x1[:, :f] = x
        self.y = np.ascontiguousarray(y, dtype=np.intp)

        # Parameters: one flat row per chain; layer l is an (in+1) x out block, bias last.
        self.offsets = [0]
        for a, b in zip(sizes[:-1], sizes[1:]):
            self.offsets.append(self.offsets[-1] + (a + 1) * b)
        self.dim = d = self.offsets[-1]
        self.theta = np.zeros((k, d), dtype=dt)
        self.v = np.zeros((k, d), dtype=dt)
        self.g = np.zeros((k, d), dtype=dt)  # eta * gradient of the data term
        self.tmp = np.empty((k, d), dtype=dt)
        self.w1 = [self._block(self.theta, l) for l in range(len(sizes) - 1)]  # (k, in+1, out)
        self.w = [w[:, :-1, :] for w in self.w1]  # (k, in, out): weights without bias row
        self.gw1 = [self._block(self.g, l) for l in range(len(sizes) - 1)]
        for l, w in enumerate(self.w):
            w[...] = rng.standard_normal(w.shape, dtype=np.float64) / math.sqrt(sizes[l])

        # Ladder: eta of each chain as a column; the backward pass is scaled by
        # N/B * eta (it is linear in its seed), so it yields eta * grad directly.
        eta = np.tile(geometric_ladder(chains, eta_min, eta_max), ensembles)
        self.eta_scale = (eta * (n / batch)).astype(dt)[:, None]  # (k, 1)
        self.eta_prior = (eta / prior_sigma ** 2).astype(dt)[:, None]  # eta / sigma^2
        self.unit_scale = np.full((k, 1), n / batch, dtype=dt)  # plain gradient
        self.half_prec = dt.type(0.5 / prior_sigma ** 2)

        # Work arrays. Hidden-layer inputs carry the ones column: layer l writes its
        # output into the first columns of layer l+1's input (a strided out= view,
        # which BLAS takes as a leading dimension), and the ReLU and its derivative
        # run over the whole contiguous buffer (1 * 1[1 > 0] keeps the ones column),
        # since numpy's ufuncs are several times slower on the strided view (a loop
        # call per row).
        self.xb = np.empty((k, batch, f + 1), dtype=dt)
        self.acts = []
        for h in hidden:
            a = np.empty((k, batch, h + 1), dtype=dt)
            a[..., h] = 1
            self.acts.append(a)
        self.inputs = [self.xb, *self.acts]  # input of layer l, with ones column
        self.outs = [a[..., :-1] for a in self.acts]  # hidden-layer output views
        # Logits stored transposed, (k, C, B): the max and sum over the C classes are
        # then element-wise over contiguous rows of B, where reducing over a short
        # last axis of C is slow in numpy.
        self.logits_t = np.empty((k, classes, batch), dtype=dt)
        # dL/d(input of layer l), l >= 1, with a (discarded) column for the ones input.
        self.dacts = [np.empty((k, batch, h + 1), dtype=dt) for h in hidden]
        # The same deltas stored transposed, (k, H, B), for every hidden layer but the
        # first (see data_gradient).
        self.deltas_t = [np.empty((k, h, batch), dtype=dt) if l > 0 else None
                         for l, h in enumerate(hidden)]
        # ReLU masks 1[z > 0] of the hidden layers (ones column included), kept from
        # the gradient pass's forward for its backward. ReLU as z * 1[z > 0] (a
        # comparison and a bool-float product) measured about twice as fast here as
        # np.maximum(z, 0), and the mask serves as ReLU' (np.sign was as slow).
        self.masks = [np.empty((k, batch, h + 1), dtype=bool) for h in hidden]
        self.rowmax = np.empty((k, batch), dtype=dt)
        self.rowsum = np.empty((k, batch), dtype=dt)
        self.zy = np.empty((k, batch), dtype=dt)
        self.labels = np.empty((k, batch), dtype=np.intp)
        self.flat_y = np.empty((k, batch), dtype=np.intp)
        self.y_off = self.y * batch  # label y of example i sits at flat k*C*B + y*B + i
        self.row_base = (np.arange(k, dtype=np.intp)[:, None] * (classes * batch)
                         + np.arange(batch, dtype=np.intp))
        self.sq = np.empty(k, dtype=dt)
        self.energies = np.empty(k, dtype=dt)

    def _block(self, flat, l):
        a, b = self.sizes[l] + 1, self.sizes[l + 1]
        view = flat[:, self.offsets[l]:self.offsets[l + 1]].reshape(self.k, a, b)
        assert np.may_share_memory(view, flat)  # a view, not a copy
        return view

    # ---- passes -------------------------------------------------------------------
    def _forward(self, idx):
        """Gathers batch `idx` (k, B) and runs the forward pass into self.logits_t."""
        np.take(self.x1, idx, axis=0, out=self.xb, mode="clip")  # indices are in range
        last = len(self.w1) - 1
        for l in range(last):
            matmul(self.inputs[l], self.w1[l], out=self.outs[l])
            act, mask = self.acts[l], self.masks[l]
            np.greater(act, 0, out=mask)  # the ones column stays 1
            np.multiply(act, mask, out=act)  # ReLU
        # logits^T = W^T @ input^T: both operands go to BLAS transposed, no copies.
        matmul(self.w1[last].transpose(0, 2, 1), self.inputs[last].transpose(0, 2, 1),
               out=self.logits_t)
        np.take(self.y_off, idx, out=self.labels, mode="clip")
        np.add(self.row_base, self.labels, out=self.flat_y)  # flat index of logit y_i

    def _softmax_parts(self):
        """Shifts the logits by their max over classes and exponentiates them in place;
        the maxima stay in self.rowmax, the sums of the exponentials go to self.rowsum."""
        z = self.logits_t
        np.max(z, axis=1, out=self.rowmax)
        np.subtract(z, self.rowmax[:, None, :], out=z)
        np.exp(z, out=z)
        np.sum(z, axis=1, out=self.rowsum)

    def data_gradient(self, idx, scale):
        """scale * (gradient of the data term sum_i -log p(y_i | x_i)) on batch idx
        into self.g, scale (k, 1) per chain: N/B * eta in the step (self.eta_scale),
        N/B for the plain gradient (self.unit_scale). The prior's term is added by the
        caller."""
        self._forward(idx)
        self._softmax_parts()
        z = self.logits_t
        # dL/dlogits = scale * (softmax - onehot(y)).
        np.divide(scale, self.rowsum, out=self.rowsum)
        np.multiply(z, self.rowsum[:, None, :], out=z)
        zf = z.reshape(-1)
        zf[self.flat_y] -= scale  # one label per example: no repeated index
        dz = z.transpose(0, 2, 1)  # (k, B, C) view of the transposed storage
        dz_in = dz  # the same delta, as the first operand of the input gradient
        for l in range(len(self.w1) - 1, -1, -1):
            # Weight and bias gradient: input^T @ dz (the ones column gives the bias row).
            matmul(self.inputs[l].transpose(0, 2, 1), dz, out=self.gw1[l])
            if l > 0:
                # Input gradient dz @ W^T, over the bias row too (one extra column, so
                # that the ReLU derivative below runs on contiguous buffers).
                da = self.dacts[l - 1]
                matmul(dz_in, self.w1[l].transpose(0, 2, 1), out=da)
                np.multiply(da, self.masks[l - 1], out=da)  # ReLU'
                dz = dz_in = da[..., :-1]
                if l > 1:
                    # Layer l-1 needs dz @ W^T too: give it dz stored (k, H, B). With
                    # W^T transposed, OpenBLAS was ~1.6x slower on (64, 64) x (64, 129)
                    # with dz stored (B, H) than with dz transposed too, far more than
                    # this copy costs.
                    dz_t = self.deltas_t[l - 1]
                    np.copyto(dz_t, dz.transpose(0, 2, 1))
                    dz_in = dz_t.transpose(0, 2, 1)

    def energy(self, idx):
        """The stochastic energy of every chain on batch idx, into self.energies."""
        self._forward(idx)
        np.take(self.logits_t.reshape(-1), self.flat_y, out=self.zy, mode="clip")  # z_{i,y_i}
        self._softmax_parts()
        # -log p(y_i) = max_i + log sum exp(z_i - max_i) - z_{i, y_i}
        np.log(self.rowsum, out=self.rowsum)
        self.rowsum += self.rowmax
        self.rowsum -= self.zy
        np.sum(self.rowsum, axis=1, out=self.energies)
        self.energies *= self.scale
        _sumsq(self.theta, self.sq)
        self.sq *= self.half_prec
        self.energies += self.sq
        return self.energies

    def step(self, idx_grad, idx_energy):
        """One chain-step of every chain: gradient on idx_grad, momentum update, energy
        at the new parameters on idx_energy."""
        self.data_gradient(idx_grad, self.eta_scale)  # g = eta * grad of the data term
        g, v, tmp = self.g, self.v, self.tmp
        # v <- mu v - eta (grad_data + theta / sigma^2); theta <- theta + v
        np.multiply(self.theta, self.eta_prior, out=tmp)
        v *= self.momentum
        v -= g
        v -= tmp
        self.theta += v
        return self.energy(idx_energy)

    def draw(self):
        """Gradient and energy batches of every chain: (2, k, B) indices, one call."""
        return self.rng.integers(0, self.n, size=(2, self.k, self.batch))

    def iterate(self):
        idx = self.draw()
        return self.step(idx[0], idx[1])

    # ---- for the checks -------------------------------------------------------------
    def gradient(self, idx):
        """Full gradient of L (data term and prior) on batch idx, a new array."""
        self.data_gradient(idx, self.unit_scale)
        return self.g + self.theta * (self.half_prec * 2)

    def layer_params(self, l):
        """(W_l, b_l) of every chain as new arrays: (k, in, out), (k, out)."""
        return self.w[l].copy(), self.w1[l][:, -1, :].copy()


def _sumsq(theta, out):
    if hasattr(np, "vecdot"):  # numpy >= 2.0: one dot per chain
        np.vecdot(theta, theta, out=out)
    else:
        np.einsum("kd,kd->k", theta, theta, out=out)


def run(ensembles=8, chains=8, iters=200, warmup=5, examples=1348, features=64, classes=10,
        hidden=(128,), batch=64, prior_sigma=1.0, eta_min=1e-5, eta_max=1e-4,
        dtype="float32", seed=0, threads=1):
    """Builds the data and the chains, runs `warmup` untimed then `iters` timed
    iterations; returns a dict of the timings and rates.

    threads > 1 splits the ensembles into `threads` groups (ensembles must be a
    multiple), each one MLPChains with its own generator, run by its own Python thread
    (numpy releases the GIL in BLAS, in ufunc loops, in take and in the generator);
    ensembles never interact, so the groups need no synchronization. Limit the BLAS to
    one thread per call then (main() does)."""
    if threads < 1 or ensembles % threads:
        raise ValueError("threads must divide ensembles")
    rng = np.random.default_rng(seed)
    x, y = make_data(examples, features, classes, rng)
    rngs = [rng] if threads == 1 else rng.spawn(threads)
    models = [MLPChains(x, y, classes, list(hidden), ensembles // threads, chains, batch,
                        prior_sigma, eta_min, eta_max, MOMENTUM, dtype, r) for r in rngs]
    if threads == 1:
        model = models[0]
        for _ in range(warmup):
            model.iterate()
        t0 = time.perf_counter()
        for _ in range(iters):
            model.iterate()
        seconds = time.perf_counter() - t0
    else:
        seconds = _run_threads(models, warmup, iters)
    model = models[0]
    steps = ensembles * chains * iters
    fl = flops_per_chain_step(model.sizes, batch)
    rate = steps / seconds if seconds > 0 else float("inf")
    energies = np.concatenate([m.energies for m in models])
    return {
        "ensembles": ensembles, "chains": chains, "chains_total": ensembles * chains,
        "examples": examples, "features": features, "classes": classes,
        "hidden": list(hidden), "layer_sizes": model.sizes, "parameters_per_chain": model.dim,
        "batch": batch, "iters": iters, "warmup": warmup, "dtype": np.dtype(dtype).name,
        "threads": threads,
        "prior_sigma": prior_sigma, "eta_min": eta_min, "eta_max": eta_max,
        "momentum": MOMENTUM,
        "seconds": seconds,
        "chain_steps": steps,
        "chain_steps_per_sec": rate,
        "examples_per_sec": rate * 2 * batch,
        "flops_per_chain_step": fl,
        "flops_formula": FLOPS_FORMULA,
        "gflops": rate * fl / 1e9,
        "energy_mean": float(np.mean(energies, dtype=np.float64)),
    }


def _run_threads(models, warmup, iters):
    """Each model iterated by its own thread; seconds from the common start (after
    every thread's warm-up) to the last thread's end."""
    start = threading.Barrier(len(models) + 1)
    errors = []

    def work(model):
        try:
            for _ in range(warmup):
                model.iterate()
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)
        start.wait()
        if errors:
            return
        try:
            for _ in range(iters):
                model.iterate()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    pool = [threading.Thread(target=work, args=(m,)) for m in models]
    for t in pool:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in pool:
        t.join()
    seconds = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return seconds


def machine_gflops(n=2048, repeats=5):
    """Best-of-`repeats` float32 rate of np.matmul on two n x n matrices, GFLOP/s."""
    rng = np.random.default_rng(1)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    c = np.empty((n, n), dtype=np.float32)
    np.matmul(a, b, out=c)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.matmul(a, b, out=c)
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n ** 3 / best / 1e9


def blas_info():
    """threadpoolctl's view of the BLAS (library, version, kernel, threads), or
    numpy's build configuration when threadpoolctl is missing."""
    try:
        from threadpoolctl import threadpool_info
        return [{k: d.get(k) for k in ("internal_api", "version", "architecture", "num_threads")}
                for d in threadpool_info() if d.get("user_api") == "blas"]
    except ImportError:
        try:
            cfg = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
            return [{k: cfg.get(k) for k in ("name", "version")}]
        except Exception:  # noqa: BLE001 - best effort
            return None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ensembles", "-E", type=int, default=8)
    p.add_argument("--chains", "-P", type=int, default=8, help="chains per ensemble")
    p.add_argument("--examples", type=int, default=1348, help="N")
    p.add_argument("--features", type=int, default=64, help="F")
    p.add_argument("--classes", type=int, default=10, help="C")
    p.add_argument("--hidden", default="128",
                   help="hidden layer sizes, comma-separated; '' or 0: softmax regression")
    p.add_argument("--batch", type=int, default=64, help="B")
    p.add_argument("--prior-sigma", type=float, default=1.0)
    p.add_argument("--eta-min", type=float, default=1e-5)
    p.add_argument("--eta-max", type=float, default=1e-4)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--warmup", type=int, default=5, help="untimed iterations first")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--threads", type=int, default=1,
                   help="Python threads, each running ensembles/threads ensembles (BLAS "
                        "limited to one thread each)")
    p.add_argument("--blas-threads", type=int, default=None,
                   help="limit the BLAS threads (threadpoolctl); default: as numpy starts, "
                        "or 1 with --threads > 1")
    p.add_argument("--machine-gflops", action="store_true",
                   help="also time float32 np.matmul of two 2048x2048 matrices (best of 5)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    a = p.parse_args(argv)
    if a.classes < 2 or a.examples < a.classes or min(a.batch, a.features, a.ensembles,
                                                      a.chains) < 1:
        p.error("need classes >= 2, examples >= classes and positive sizes")
    kw = dict(ensembles=a.ensembles, chains=a.chains, iters=a.iters, warmup=a.warmup,
              examples=a.examples, features=a.features, classes=a.classes,
              hidden=parse_hidden(a.hidden), batch=a.batch, prior_sigma=a.prior_sigma,
              eta_min=a.eta_min, eta_max=a.eta_max, dtype=a.dtype, seed=a.seed,
              threads=a.threads)
    if a.ensembles % a.threads:
        p.error("--threads must divide --ensembles")
    if a.blas_threads is None and a.threads > 1:
        a.blas_threads = 1
    if a.blas_threads is not None:
        from threadpoolctl import threadpool_limits
        with threadpool_limits(limits=a.blas_threads, user_api="blas"):
            result = run(**kw)
            blas = blas_info()
    else:
        result = run(**kw)
        blas = blas_info()
    if a.machine_gflops:
        result["machine_gflops"] = machine_gflops()
    result["numpy_version"] = np.__version__
    result["blas"] = blas
    if a.json:
        print(json.dumps(result))
    else:
        print(f"{result['chains_total']} chains, layers {result['layer_sizes']}, B={a.batch}, "
              f"{a.dtype}: {result['chain_steps_per_sec']:.4g} chain-steps/s, "
              f"{result['examples_per_sec']:.4g} examples/s, {result['gflops']:.3g} GFLOP/s"
              + (f" (machine {result['machine_gflops']:.3g} GFLOP/s)"
                 if "machine_gflops" in result else "")
              + f", {result['seconds']:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
