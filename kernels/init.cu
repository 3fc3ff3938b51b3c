// init.cu: start-of-run kernels (Engine::start on the device) and the Philox probe.
#include "chain.cuh"
#include "swap.cuh"

/// Everything but the states, one thread per chain c = e·P + r: ladder and temperatures
/// copied from the host's P values, identity permutation, trip states, open gates,
/// zero flags, counts, energies, momenta; buffer C₀ and zero stats per ensemble.
extern "C" __global__ void init_ensembles(NrptGpuParams p, NrptArrays a, const double* ladder0,
                                          const double* temps0, double buffer0) {
    const nrpt_u32 P = p.core.chains;
    const nrpt_u64 n = (nrpt_u64)p.ensembles * P;
    nrpt_u64 c = (nrpt_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n) return;
    nrpt_u32 r = (nrpt_u32)(c % P);
    nrpt_u64 e = c / P;
    a.ladder[c] = ladder0[r];
    a.temps[c] = temps0[r];
    a.replica_at[c] = r;
    a.level_of[c] = r;
    a.trips[c] = nrpt_initial_trip_state(r, P - 1u);
    a.energies[c] = 0.0f;
    if (r + 1u < P) {
        nrpt_u64 q = e * (P - 1u) + r;
        a.gates[q] = 1u;
        a.flags[q] = 0u;
        NrptPairStats z = {0u, 0u, 0u, 0u};
        a.pairs[q] = z;
    }
    if (r == 0u) {
        a.buffers[e] = buffer0;
        NrptIndexStats z = {0u, 0u, 0u, 0u};
        a.stats[e] = z;
    }
}

/// Uniform initial states (InitialStates::Uniform), one thread per coordinate; momenta
/// to zero. S = storage type.
template <class S>
__device__ void init_states(const NrptGpuParams& p, NrptArrays a) {
    const nrpt_u32 P = p.core.chains, D = p.core.dim;
    const nrpt_u64 n = (nrpt_u64)p.ensembles * P * D;
    nrpt_u64 i = (nrpt_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    nrpt_u64 c = i / D;
    nrpt_u32 j = (nrpt_u32)(i % D);
    nrpt_u32 r = (nrpt_u32)(c % P);
    nrpt_u32 e = (nrpt_u32)(c / P);
    typename S::T* x = (typename S::T*)a.states;
    if (p.init_uniform) {
        NrptCursor cur = nrpt_cursor(
            nrpt_stream(p.core.seed, p.core.ensemble + e, 0u, r, NRPT_STREAM_INIT), 0u);
        S::store(x + i, nrpt_init_coord(&p, &cur, j));
    }
    if (a.momenta) S::store((typename S::T*)a.momenta + i, 0.0f);
}

extern "C" __global__ void init_states_f32(NrptGpuParams p, NrptArrays a) { init_states<NrptStoreF32>(p, a); }
extern "C" __global__ void init_states_bf16(NrptGpuParams p, NrptArrays a) { init_states<NrptStoreBf16>(p, a); }
extern "C" __global__ void init_states_f16(NrptGpuParams p, NrptArrays a) { init_states<NrptStoreF16>(p, a); }

/// Philox probe: item i reads counter (4 words) and key (2 words) from `input[6i..]`
/// and writes the block to `out[4i..]`.
extern "C" __global__ void philox_probe(const nrpt_u32* input, nrpt_u32* out, nrpt_u32 n) {
    nrpt_u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const nrpt_u32* q = input + 6u * i;
    NrptBlock b = nrpt_philox(q[0], q[1], q[2], q[3], q[4], q[5]);
    out[4u * i] = b.w0;
    out[4u * i + 1u] = b.w1;
    out[4u * i + 2u] = b.w2;
    out[4u * i + 3u] = b.w3;
}

/// Math probe: item i turns words (w0, w1) = input[2i..] into box_muller_f32 and also
/// writes ln(uniform(w0)) and sin/cos 2π of uniform(w1)·8 (arguments beyond one
/// period, as the targets see them): out[5i..].
extern "C" __global__ void math_probe(const nrpt_u32* input, float* out, nrpt_u32 n) {
    nrpt_u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    nrpt_u32 w0 = input[2u * i], w1 = input[2u * i + 1u];
    NrptPair z = nrpt_box_muller_f32(w0, w1);
    NrptSinCos sc = nrpt_sin_cos_2pi(nrpt_uniform_f32(w1) * 8.0f);
    out[5u * i] = z.z0;
    out[5u * i + 1u] = z.z1;
    out[5u * i + 2u] = nrpt_ln(nrpt_uniform_f32(w0));
    out[5u * i + 3u] = sc.s;
    out[5u * i + 4u] = sc.c;
}

/// A plain device-to-device copy of `n` 16-byte words, the bandwidth yardstick of the
/// bench (what a step at D = 1024 could at best reach).
extern "C" __global__ void copy_kernel(const float4* src, float4* dst, nrpt_u64 n) {
    nrpt_u64 i = (nrpt_u64)blockIdx.x * blockDim.x + threadIdx.x;
    nrpt_u64 stride = (nrpt_u64)gridDim.x * blockDim.x;
    for (; i < n; i += stride) dst[i] = src[i];
}
