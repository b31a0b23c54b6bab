/* Mamba's selective scan on the CPU, forward and backward, fused: compiled by zoo/nn/recurrence.py.

   Eager PyTorch makes the scan's (B, L, E, N) tensors (decays, inputs u_t B_t, states, adjoints) a chunk of time
   at a time and passes over each several times: at a training batch's size (130 sequences × 512 channels × 16
   states) a chunk of one step is already 4 MiB, beyond the cache, and the scan was bound by memory. Here no such
   tensor is made: for one sequence the state (G × N × C numbers, 32 KiB at 512 channels of 16 states) stays in
   cache, and every step reads the step's inputs once, updates the state and writes the step's outputs. The
   backward pass makes each chunk's states again from the state saved at the chunk's start, then runs the adjoint
   backwards through the chunk, forming every gradient where it is summed.

   Layouts, all contiguous: per-channel tensors (u, Δ, y and their gradients) (B, L, G, C): batch, steps, groups
   of channels (each with its own B and C maps), channels per group; the maps (B, L, G, N); A (G, N, C), the
   states (B, G, N, C). The sums are those of the PyTorch form in zoo/nn/ssm.py, equal to rounding.

   The functions are written once, below the #else, and this file includes itself twice to make them for float
   (scan_f32, scan_backward_f32) and double (scan_f64, scan_backward_f64). */

#ifndef SCALAR
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* 1/n!, the Taylor coefficients of e^x, to the 13th power (exp2 below takes as many as its type needs). */
static const double INVERSE_FACTORIALS[] = {
    1.0,          1.0,           1.0 / 2.0,       1.0 / 6.0,        1.0 / 24.0,        1.0 / 120.0,       1.0 / 720.0,
    1.0 / 5040.0, 1.0 / 40320.0, 1.0 / 362880.0,  1.0 / 3628800.0,  1.0 / 39916800.0,  1.0 / 479001600.0,
    1.0 / 6227020800.0,
};

/* Per type: its unsigned integer of the same width, the mantissa's bits, the exponent's bias and the Taylor
   terms exp2 takes. */
#define SCALAR float
#define UINT uint32_t
#define MANTISSA 23
#define BIAS 127
#define TERMS 7
#define NAME(function) function##_f32
#include __FILE__
#undef SCALAR
#undef UINT
#undef MANTISSA
#undef BIAS
#undef TERMS
#undef NAME

#define SCALAR double
#define UINT uint64_t
#define MANTISSA 52
#define BIAS 1023
#define TERMS 13
#define NAME(function) function##_f64
#include __FILE__
#undef SCALAR
#undef UINT
#undef MANTISSA
#undef BIAS
#undef TERMS
#undef NAME

#else

/* 2^x for the decays, in a form the compiler vectorises (a call to the C library's exp2 it cannot): x = k + f,
   k = round(x), |f| <= 1/2, 2^x = 2^k · e^(f ln 2). The rounding is the float's own (adding 1.5 · 2^MANTISSA
   leaves k in the sum's low bits, which shifted into the exponent field give 2^k) and e^(f ln 2) is its Taylor
   series, to the 13th power in double (the first term left out below 5e-18) and the 7th in float (below 6e-9):
   within one unit in the last place of torch's exp2 (tests/unit/test_recurrence.py). x is clamped to the normal
   range: a decay of 2^-1022 (2^-126 in float) stands for anything smaller. */
static inline SCALAR NAME(exp2)(SCALAR x) {
    const SCALAR lowest = 1 - BIAS, highest = BIAS, shifter = (SCALAR)1.5 * (SCALAR)((UINT)1 << MANTISSA);
    x = x < lowest ? lowest : (x > highest ? highest : x);
    SCALAR shifted = x + shifter, k = shifted - shifter, f = (x - k) * (SCALAR)0x1.62e42fefa39efp-1; /* f ln 2 */
    SCALAR p = (SCALAR)INVERSE_FACTORIALS[TERMS];
    for (int n = TERMS - 1; n >= 0; n--) p = p * f + (SCALAR)INVERSE_FACTORIALS[n];
    UINT bits;
    SCALAR scale;
    memcpy(&bits, &shifted, sizeof bits);
    bits = (bits + BIAS) << MANTISSA;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

/* One step of one sequence: h = 2^(Δ_t A2) h + u_t B_t, then y_t = sum_n C_t h (A2 = A log2 e). Where ``decays``
   is given, the step's decays are kept there (G, N, C). */
static void NAME(step)(const SCALAR *restrict u, const SCALAR *restrict delta, const SCALAR *restrict A2,
                       const SCALAR *restrict maps_b, const SCALAR *restrict maps_c, SCALAR *restrict h,
                       SCALAR *restrict y, SCALAR *restrict decays, ptrdiff_t groups, ptrdiff_t n_states,
                       ptrdiff_t channels) {
    for (ptrdiff_t k = 0; k < groups; k++) {
        const SCALAR *u_k = u + k * channels, *delta_k = delta + k * channels;
        SCALAR *y_k = y + k * channels;
        for (ptrdiff_t c = 0; c < channels; c++) y_k[c] = 0;
        for (ptrdiff_t n = 0; n < n_states; n++) {
            ptrdiff_t at = (k * n_states + n) * channels;
            SCALAR b = maps_b[k * n_states + n], c_n = maps_c[k * n_states + n];
            SCALAR *h_n = h + at;
            const SCALAR *a_n = A2 + at;
            if (decays) {  /* two loops: a conditional store in one made the vectorised loop twice as slow */
                SCALAR *decay = decays + at;
#pragma omp simd
                for (ptrdiff_t c = 0; c < channels; c++) decay[c] = NAME(exp2)(delta_k[c] * a_n[c]);
                for (ptrdiff_t c = 0; c < channels; c++) {
                    h_n[c] = decay[c] * h_n[c] + u_k[c] * b;
                    y_k[c] += c_n * h_n[c];
                }
            } else {
#pragma omp simd
                for (ptrdiff_t c = 0; c < channels; c++) {
                    h_n[c] = NAME(exp2)(delta_k[c] * a_n[c]) * h_n[c] + u_k[c] * b;
                    y_k[c] += c_n * h_n[c];
                }
            }
        }
    }
}

/* The scan from h = 0: y (B, L, G, C), the state every ``interval`` steps into starts (B, K, G, N, C) and the
   last state into last (B, G, N, C). */
void NAME(scan)(const SCALAR *restrict u, const SCALAR *restrict delta, const SCALAR *restrict A2,
                const SCALAR *restrict maps_b, const SCALAR *restrict maps_c, SCALAR *restrict y,
                SCALAR *restrict starts, SCALAR *restrict last, ptrdiff_t batch, ptrdiff_t length, ptrdiff_t groups,
                ptrdiff_t n_states, ptrdiff_t channels, ptrdiff_t interval) {
    ptrdiff_t lanes = groups * n_states * channels, width = groups * channels, maps = groups * n_states;
    ptrdiff_t saves = (length + interval - 1) / interval;
    for (ptrdiff_t b = 0; b < batch; b++) {
        SCALAR *h = last + b * lanes;
        memset(h, 0, lanes * sizeof(SCALAR));
        for (ptrdiff_t t = 0; t < length; t++) {
            if (t % interval == 0) memcpy(starts + (b * saves + t / interval) * lanes, h, lanes * sizeof(SCALAR));
            ptrdiff_t step = b * length + t;
            NAME(step)(u + step * width, delta + step * width, A2, maps_b + step * maps, maps_c + step * maps, h,
                       y + step * width, NULL, groups, n_states, channels);
        }
    }
}

/* Backwards through the scan, a chunk of ``interval`` steps at a time from its saved start: the adjoint g_t =
   C_t dy_t + decay_{t+1} g_{t+1} (from g = the last state's gradient), and with it du_t = sum_n g_t B_t, dB_t =
   sum_c g_t u_t, dC_t = sum_c h_t dy_t and, through the decay with dlog = g_t decay_t h_{t-1}, dΔ_t = sum_n dlog A
   (written) and dA += dlog Δ_t (added to). ``work`` holds a chunk's states and decays (2 × min(interval, length) ×
   G × N × C), ``g`` one adjoint state (G × N × C). The recomputed chunk's outputs y_t are not needed: they are
   written into du, which each step's backward pass then overwrites. */
void NAME(scan_backward)(const SCALAR *restrict u, const SCALAR *restrict delta, const SCALAR *restrict A,
                         const SCALAR *restrict A2, const SCALAR *restrict maps_b, const SCALAR *restrict maps_c,
                         const SCALAR *restrict starts, const SCALAR *restrict dy, const SCALAR *restrict dlast,
                         SCALAR *restrict du, SCALAR *restrict ddelta, SCALAR *restrict dA, SCALAR *restrict dB,
                         SCALAR *restrict dC, SCALAR *restrict work, SCALAR *restrict g, ptrdiff_t batch,
                         ptrdiff_t length, ptrdiff_t groups, ptrdiff_t n_states, ptrdiff_t channels,
                         ptrdiff_t interval) {
    ptrdiff_t lanes = groups * n_states * channels, width = groups * channels, maps = groups * n_states;
    ptrdiff_t saves = (length + interval - 1) / interval;
    SCALAR *states = work, *decays = work + (length < interval ? length : interval) * lanes;
    for (ptrdiff_t b = 0; b < batch; b++) {
        memcpy(g, dlast + b * lanes, lanes * sizeof(SCALAR));
        for (ptrdiff_t index = saves - 1; index >= 0; index--) {
            const SCALAR *start = starts + (b * saves + index) * lanes;
            ptrdiff_t first = index * interval, steps = length - first < interval ? length - first : interval;
            for (ptrdiff_t j = 0; j < steps; j++) {  /* the chunk's states and decays again, from its start */
                ptrdiff_t step = b * length + first + j;
                SCALAR *h = states + j * lanes;
                memcpy(h, j ? h - lanes : start, lanes * sizeof(SCALAR));
                NAME(step)(u + step * width, delta + step * width, A2, maps_b + step * maps, maps_c + step * maps,
                           h, du + step * width, decays + j * lanes, groups, n_states, channels);
            }
            for (ptrdiff_t j = steps - 1; j >= 0; j--) {
                ptrdiff_t step = b * length + first + j;
                const SCALAR *h = states + j * lanes, *previous = j ? h - lanes : start, *decay = decays + j * lanes;
                for (ptrdiff_t k = 0; k < groups; k++) {
                    ptrdiff_t channel = step * width + k * channels, map = step * maps + k * n_states;
                    const SCALAR *dy_k = dy + channel, *u_k = u + channel, *delta_k = delta + channel;
                    SCALAR *du_k = du + channel, *ddelta_k = ddelta + channel;
                    for (ptrdiff_t c = 0; c < channels; c++) du_k[c] = ddelta_k[c] = 0;
                    for (ptrdiff_t n = 0; n < n_states; n++) {
                        ptrdiff_t at = (k * n_states + n) * channels;
                        SCALAR b_n = maps_b[map + n], c_n = maps_c[map + n], db = 0, dc = 0;
                        SCALAR *g_n = g + at, *dA_n = dA + at;
                        const SCALAR *h_n = h + at, *previous_n = previous + at, *decay_n = decay + at, *A_n = A + at;
#pragma omp simd reduction(+ : db, dc)
                        for (ptrdiff_t c = 0; c < channels; c++) {
                            SCALAR adjoint = g_n[c] + c_n * dy_k[c];
                            SCALAR dlog = adjoint * decay_n[c] * previous_n[c];
                            dc += h_n[c] * dy_k[c];
                            db += adjoint * u_k[c];
                            du_k[c] += adjoint * b_n;
                            ddelta_k[c] += dlog * A_n[c];
                            dA_n[c] += dlog * delta_k[c];
                            g_n[c] = decay_n[c] * adjoint;
                        }
                        dB[map + n] = db;
                        dC[map + n] = dc;
                    }
                }
            }
        }
    }
}

#endif
