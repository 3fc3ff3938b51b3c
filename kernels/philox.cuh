// philox.cuh: Philox4x32-10 (Salmon et al., SC'11), bit-identical to
// nrpt_core::rng::philox4x32_10, and the keyed-stream word layout of
// nrpt_core::rng::PhiloxStream: key = [seed, ensemble], counter = [iteration mod 2^32,
// iteration div 2^32, stream · 2^24 + replica, block] (rng::counter), word i = lane
// i % 4 of block i / 4. The iteration is a full 64-bit number everywhere, so a run
// past 2^32 iterations never repeats a stream.
#pragma once
#include "common.cuh"

#define NRPT_PHILOX_M0 0xD2511F53u
#define NRPT_PHILOX_M1 0xCD9E8D57u
#define NRPT_PHILOX_W0 0x9E3779B9u
#define NRPT_PHILOX_W1 0xBB67AE85u

/// Stream ids (top 8 bits of the third counter word), as nrpt_core::rng::streams.
/// streams::PAIR (3) belongs to the host-only rule of fresh energies per pair test,
/// which the kernels refuse (TemperingOptions::params), so it has no name here.
#define NRPT_STREAM_STEP 0u
#define NRPT_STREAM_SWAP 1u
#define NRPT_STREAM_INIT 2u
/// rng::stream::REPLICA_BITS: the low bits of the third counter word hold the replica.
#define NRPT_REPLICA_BITS 24u
/// rng::ENSEMBLE_WIDE (2^24 − 1): the replica index of ensemble-wide draws, and the
/// mask of the replica field.
#define NRPT_ENSEMBLE_WIDE 0x00FFFFFFu

/// Four words of one Philox block.
struct NrptBlock {
    nrpt_u32 w0, w1, w2, w3;
};

NRPT_HD nrpt_u32 nrpt_mulhi(nrpt_u32 a, nrpt_u32 b) {
#if defined(__CUDA_ARCH__)
    return __umulhi(a, b);
#else
    return (nrpt_u32)(((nrpt_u64)a * (nrpt_u64)b) >> 32);
#endif
}

/// philox4x32_10(counter, key).
NRPT_HD NrptBlock nrpt_philox(nrpt_u32 c0, nrpt_u32 c1, nrpt_u32 c2, nrpt_u32 c3,
                              nrpt_u32 k0, nrpt_u32 k1) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int i = 0; i < 10; ++i) {
        if (i > 0) {
            k0 += NRPT_PHILOX_W0;
            k1 += NRPT_PHILOX_W1;
        }
        nrpt_u32 hi0 = nrpt_mulhi(NRPT_PHILOX_M0, c0), lo0 = NRPT_PHILOX_M0 * c0;
        nrpt_u32 hi1 = nrpt_mulhi(NRPT_PHILOX_M1, c2), lo1 = NRPT_PHILOX_M1 * c2;
        nrpt_u32 n0 = hi1 ^ c1 ^ k0;
        nrpt_u32 n2 = hi0 ^ c3 ^ k1;
        c0 = n0;
        c1 = lo1;
        c2 = n2;
        c3 = lo0;
    }
    NrptBlock b;
    b.w0 = c0;
    b.w1 = c1;
    b.w2 = c2;
    b.w3 = c3;
    return b;
}

/// Lane `lane` (0..3) of a block, without dynamic indexing (no local memory).
NRPT_HD nrpt_u32 nrpt_lane(NrptBlock b, nrpt_u32 lane) {
    nrpt_u32 lo = (lane & 1u) ? b.w1 : b.w0;
    nrpt_u32 hi = (lane & 1u) ? b.w3 : b.w2;
    return (lane & 2u) ? hi : lo;
}

/// Address of one keyed stream (PhiloxStream::new), kept as the three fixed counter
/// words and the key: five words, as many registers as the fields themselves.
struct NrptStream {
    nrpt_u32 c0, c1, c2;  // rng::counter(iteration, replica, stream, ·)[0..3]
    nrpt_u32 seed, ensemble;
};

NRPT_HD NrptStream nrpt_stream(nrpt_u32 seed, nrpt_u32 ensemble, nrpt_u64 iteration,
                               nrpt_u32 replica, nrpt_u32 stream) {
    NrptStream s;
    s.c0 = (nrpt_u32)iteration;
    s.c1 = (nrpt_u32)(iteration >> 32);
    // Masked as core masks it, so that no replica index can reach the stream bits.
    s.c2 = (stream << NRPT_REPLICA_BITS) | (replica & NRPT_ENSEMBLE_WIDE);
    s.seed = seed;
    s.ensemble = ensemble;
    return s;
}

/// Block `block` of a stream (PhiloxStream::block).
NRPT_HD NrptBlock nrpt_stream_block(NrptStream s, nrpt_u32 block) {
    return nrpt_philox(s.c0, s.c1, s.c2, block, s.seed, s.ensemble);
}

/// Word `index` of a stream (PhiloxStream::word), recomputing its block.
NRPT_HD nrpt_u32 nrpt_stream_word(NrptStream s, nrpt_u64 index) {
    return nrpt_lane(nrpt_stream_block(s, (nrpt_u32)(index >> 2)), (nrpt_u32)(index & 3u));
}

/// A stream read in order with the current block cached (PhiloxStream::next_u32).
struct NrptCursor {
    NrptStream s;
    nrpt_u32 pos;     // next word (streams here never exceed 2^32 words)
    nrpt_u32 cached;  // block number held in buf, or 0xFFFFFFFF
    NrptBlock buf;
};

NRPT_HD NrptCursor nrpt_cursor(NrptStream s, nrpt_u32 pos) {
    NrptCursor c;
    c.s = s;
    c.pos = pos;
    c.cached = 0xFFFFFFFFu;
    c.buf.w0 = c.buf.w1 = c.buf.w2 = c.buf.w3 = 0u;
    return c;
}

/// Word `index` through the cache (random access that is cheap when sequential).
NRPT_HD nrpt_u32 nrpt_cursor_word(NrptCursor* c, nrpt_u32 index) {
    nrpt_u32 block = index >> 2;
    if (block != c->cached) {
        c->buf = nrpt_stream_block(c->s, block);
        c->cached = block;
    }
    return nrpt_lane(c->buf, index & 3u);
}

NRPT_HD nrpt_u32 nrpt_cursor_next(NrptCursor* c) {
    nrpt_u32 w = nrpt_cursor_word(c, c->pos);
    c->pos += 1u;
    return w;
}
