// mlp_host.cpp: the classifier kernels (kernels/mlp.cuh) compiled for the CPU with
// -ffp-contract=off: the step of one chain, the exchange of one ensemble and the
// energy/gradient of one state, each running every phase for every thread of a block
// in turn, exactly the work the GPU spreads over a block between its barriers.
// nrpt-cuda's tests call these through extern "C" shims to compare with nrpt-core.
#include "mlp.cuh"

/// Runs a phase for every thread of a block in turn (the barrier is implicit).
struct NrptMlpHostExec {
    template <class F>
    void all(F f) {
        for (nrpt_u32 t = 0; t < NRPT_MLP_THREADS; ++t) f(t);
    }
};

extern "C" {

float nrpt_mlp_host_expf(float x) { return nrpt_libm_expf(x); }
float nrpt_mlp_host_logf(float x) { return nrpt_libm_logf(x); }

/// Iteration k of chain c (block c of mlp_step): `sm` holds p->sm_words words.
float nrpt_mlp_host_step_chain(const NrptMlpParams* p, nrpt_u64 k, const NrptMlpArrays* a,
                               nrpt_u64 c, float* sm) {
    NrptMlpHostExec ex;
    return nrpt_mlp_step_chain(ex, p, k, a, c, sm);
}

/// The energy of θ on `batch` and, unless `grad` is null, its gradient.
float nrpt_mlp_host_evaluate(const NrptMlpParams* p, const float* theta, const nrpt_u32* batch,
                             const float* data_x, const nrpt_u32* data_y, float* grad,
                             float* sm) {
    NrptMlpHostExec ex;
    return nrpt_mlp_evaluate(ex, p, theta, batch, data_x, data_y, grad, sm);
}

/// Iteration k's exchange of ensemble e (block e of mlp_exchange).
void nrpt_mlp_host_exchange(const NrptGpuParams* p, nrpt_u64 k, const NrptIterConsts* ic,
                            const NrptArrays* a, nrpt_u8* record, nrpt_u32 e) {
    NrptTeam team = nrpt_host_team(false);
    nrpt_mlp_exchange_ensemble(p, e, k, ic, a, record, &team);
    // Warps 1.. of the block zero the momenta, as in mlp_exchange.
    const nrpt_u32 n = NRPT_MLP_EXCHANGE_THREADS - 32u;
    for (nrpt_u32 t = 0; t < n; ++t) nrpt_mlp_zero_momenta(p, e, a, t, n);
}

/// sizeof of the parameter blocks, for the layout checks of the Rust mirrors.
void nrpt_mlp_host_sizes(nrpt_u32* out) {
    out[0] = (nrpt_u32)sizeof(NrptMlpLayer);
    out[1] = (nrpt_u32)sizeof(NrptMlpParams);
    out[2] = (nrpt_u32)sizeof(NrptMlpArrays);
    out[3] = NRPT_MLP_THREADS;
    out[4] = NRPT_MLP_EXCHANGE_THREADS;
}

}  // extern "C"
