// storage.cuh: how a state coordinate is stored in memory. Arithmetic is always f32;
// D-dimensional states may be stored as f32, bf16 or f16 (round to nearest even on
// store, exact widening on load), which halves the bytes a memory-bound step moves.
// The conversions are written with integer operations so the host build gives the
// same bits as the GPU (and as the `half` crate).
#pragma once
#include "common.cuh"

/// Every storage type S has: T (the stored element), decode(T) -> float (exact),
/// encode(float) -> T (round to nearest even), load/store of one coordinate,
/// round(v) = decode(encode(v)) (the value a store then a load would give, without the
/// memory round trip), and load4/store4 of four consecutive coordinates, one vector
/// access on the GPU (16 bytes for f32, 8 for bf16/f16), which needs the address
/// aligned to four coordinates.

/// f32 storage.
struct NrptStoreF32 {
    typedef float T;
    static NRPT_MEMBER float decode(T v) { return v; }
    static NRPT_MEMBER T encode(float v) { return v; }
    static NRPT_MEMBER float load(const T* p) { return *p; }
    static NRPT_MEMBER void store(T* p, float v) { *p = v; }
    static NRPT_MEMBER float round(float v) { return v; }
    static NRPT_MEMBER void load4(const T* p, float* x) {
#if defined(__CUDA_ARCH__)
        float4 v = *(const float4*)p;
        x[0] = v.x;
        x[1] = v.y;
        x[2] = v.z;
        x[3] = v.w;
#else
        for (int i = 0; i < 4; ++i) x[i] = p[i];
#endif
    }
    static NRPT_MEMBER void store4(T* p, const float* x) {
#if defined(__CUDA_ARCH__)
        *(float4*)p = make_float4(x[0], x[1], x[2], x[3]);
#else
        for (int i = 0; i < 4; ++i) p[i] = x[i];
#endif
    }
};

/// load4/store4 of 16-bit storage S (bf16 or f16): one 8-byte access on the GPU.
template <class S>
struct NrptHalfVec {
    static NRPT_MEMBER void load4(const nrpt_u16* p, float* x) {
#if defined(__CUDA_ARCH__)
        uint2 w = *(const uint2*)p;
        x[0] = S::decode((nrpt_u16)(w.x & 0xffffu));
        x[1] = S::decode((nrpt_u16)(w.x >> 16));
        x[2] = S::decode((nrpt_u16)(w.y & 0xffffu));
        x[3] = S::decode((nrpt_u16)(w.y >> 16));
#else
        for (int i = 0; i < 4; ++i) x[i] = S::decode(p[i]);
#endif
    }
    static NRPT_MEMBER void store4(nrpt_u16* p, const float* x) {
#if defined(__CUDA_ARCH__)
        uint2 w;
        w.x = (nrpt_u32)S::encode(x[0]) | ((nrpt_u32)S::encode(x[1]) << 16);
        w.y = (nrpt_u32)S::encode(x[2]) | ((nrpt_u32)S::encode(x[3]) << 16);
        *(uint2*)p = w;
#else
        for (int i = 0; i < 4; ++i) p[i] = S::encode(x[i]);
#endif
    }
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
    static NRPT_MEMBER float decode(T h) { return nrpt_bf16_to_f32(h); }
    static NRPT_MEMBER T encode(float v) { return nrpt_f32_to_bf16(v); }
    static NRPT_MEMBER float load(const T* p) { return decode(*p); }
    static NRPT_MEMBER void store(T* p, float v) { *p = encode(v); }
    static NRPT_MEMBER float round(float v) { return decode(encode(v)); }
    static NRPT_MEMBER void load4(const T* p, float* x) { NrptHalfVec<NrptStoreBf16>::load4(p, x); }
    static NRPT_MEMBER void store4(T* p, const float* x) { NrptHalfVec<NrptStoreBf16>::store4(p, x); }
};

/// f16 storage. On the GPU the conversions are the hardware's `cvt` instructions
/// (round to nearest even, the same results as the integer versions above, which the
/// host build uses and the tests check against the `half` crate).
struct NrptStoreF16 {
    typedef nrpt_u16 T;
    static NRPT_MEMBER float decode(T h) {
#if defined(__CUDA_ARCH__)
        float f;
        asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
        return f;
#else
        return nrpt_f16_to_f32(h);
#endif
    }
    static NRPT_MEMBER T encode(float v) {
#if defined(__CUDA_ARCH__)
        nrpt_u16 h;
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
        return h;
#else
        return nrpt_f32_to_f16(v);
#endif
    }
    static NRPT_MEMBER float load(const T* p) { return decode(*p); }
    static NRPT_MEMBER void store(T* p, float v) { *p = encode(v); }
    static NRPT_MEMBER float round(float v) { return decode(encode(v)); }
    static NRPT_MEMBER void load4(const T* p, float* x) { NrptHalfVec<NrptStoreF16>::load4(p, x); }
    static NRPT_MEMBER void store4(T* p, const float* x) { NrptHalfVec<NrptStoreF16>::store4(p, x); }
};
