// storage.cuh: how a state coordinate is stored in memory. Arithmetic is always f32;
// D-dimensional states may be stored as f32, bf16 or f16 (round to nearest even on
// store, exact widening on load), which halves the bytes a memory-bound step moves.
// The conversions are written with integer operations so the host build gives the
// same bits as the GPU (and as the `half` crate).
#pragma once
#include "common.cuh"

/// f32 storage.
struct NrptStoreF32 {
    typedef float T;
    static NRPT_MEMBER float load(const T* p) { return *p; }
    static NRPT_MEMBER void store(T* p, float v) { *p = v; }
};

/// bf16 bits -> f32 (exact).
NRPT_HD float nrpt_bf16_to_f32(nrpt_u16 h) { return nrpt_f32_from_bits(((nrpt_u32)h) << 16); }

/// f32 -> bf16 bits, round to nearest even; NaN stays a (quiet) NaN.
NRPT_HD nrpt_u16 nrpt_f32_to_bf16(float f) {
    nrpt_u32 u = nrpt_f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return (nrpt_u16)((u >> 16) | 0x0040u);
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    return (nrpt_u16)(u >> 16);
}

/// f16 bits -> f32 (exact).
NRPT_HD float nrpt_f16_to_f32(nrpt_u16 h) {
    nrpt_u32 sign = ((nrpt_u32)(h & 0x8000u)) << 16;
    nrpt_u32 exp = (h >> 10) & 0x1fu;
    nrpt_u32 man = h & 0x3ffu;
    if (exp == 0x1fu) {
        return nrpt_f32_from_bits(sign | 0x7f800000u | (man << 13));
    }
    if (exp == 0u) {
        // ±0 or subnormal: man · 2^-24, exact in f32.
        float v = (float)man * (1.0f / 16777216.0f);
        return (sign != 0u) ? -v : v;
    }
    return nrpt_f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

/// f32 -> f16 bits, round to nearest even, overflow to infinity, NaN stays NaN.
NRPT_HD nrpt_u16 nrpt_f32_to_f16(float f) {
    nrpt_u32 x = nrpt_f32_to_bits(f);
    nrpt_u32 sign = (x >> 16) & 0x8000u;
    nrpt_u32 ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) {
        return (nrpt_u16)(sign | 0x7c00u | ((ax > 0x7f800000u) ? (0x0200u | ((ax >> 13) & 0x3ffu)) : 0u));
    }
    if (ax >= 0x477ff000u) {
        return (nrpt_u16)(sign | 0x7c00u);  // rounds to >= 65520: infinity
    }
    nrpt_i32 e = (nrpt_i32)(ax >> 23) - 127;
    if (e < -25) {
        return (nrpt_u16)sign;  // below half the smallest subnormal: ±0
    }
    nrpt_u32 man = (ax & 0x7fffffu) | 0x800000u;
    if (e < -14) {
        // Subnormal half: value = man · 2^(e−23), in units of 2^-24: man >> (−e − 1).
        nrpt_u32 shift = (nrpt_u32)(-e - 1);  // 14..24
        nrpt_u32 q = man >> shift;
        nrpt_u32 rem = man & ((1u << shift) - 1u);
        nrpt_u32 half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u))) q += 1u;
        return (nrpt_u16)(sign | q);
    }
    nrpt_u32 q = ((nrpt_u32)(e + 15) << 10) | ((man >> 13) & 0x3ffu);
    nrpt_u32 rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) q += 1u;
    return (nrpt_u16)(sign | q);
}

/// bf16 storage.
struct NrptStoreBf16 {
    typedef nrpt_u16 T;
    static NRPT_MEMBER float load(const T* p) { return nrpt_bf16_to_f32(*p); }
    static NRPT_MEMBER void store(T* p, float v) { *p = nrpt_f32_to_bf16(v); }
};

/// f16 storage. On the GPU the conversions are the hardware's `cvt` instructions
/// (round to nearest even, the same results as the integer versions above, which the
/// host build uses and the tests check against the `half` crate).
struct NrptStoreF16 {
    typedef nrpt_u16 T;
    static NRPT_MEMBER float load(const T* p) {
#if defined(__CUDA_ARCH__)
        float f;
        asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(*p));
        return f;
#else
        return nrpt_f16_to_f32(*p);
#endif
    }
    static NRPT_MEMBER void store(T* p, float v) {
#if defined(__CUDA_ARCH__)
        nrpt_u16 h;
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
        *p = h;
#else
        *p = nrpt_f32_to_f16(v);
#endif
    }
};
