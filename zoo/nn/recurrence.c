/* A chunk of Mamba's selective scan on the CPU, forward and backward, compiled by zoo/nn/recurrence.py.

   Eager PyTorch takes the recurrence one step at a time, each step one call of a few microseconds (mostly
   dispatch) for a few thousand numbers, and makes every product of the backward pass as a whole tensor of its
   own. Here a chunk is one call: the steps are passes of multiply-adds over contiguous channels, which the compiler
   vectorises, and the backward pass forms each step's gradient of Δ_t A and sums it where it is made.

   A chunk's tensors are laid out (B, T, G, N, C): batch, steps, groups of channels (each with its own B and C
   maps), states per channel, channels per group, contiguous; per-channel inputs are (B, T, G, C), the maps
   (B, T, G, N), A (G, N, C). The sums are those of the PyTorch form in zoo/nn/recurrence.py, equal to rounding.

   The functions are written once, below the #else, and this file includes itself twice to make them for float
   (states_f32, adjoints_f32) and double (states_f64, adjoints_f64). */

#ifndef SCALAR
#include <stddef.h>

#define SCALAR float
#define NAME(function) function##_f32
#include __FILE__
#undef SCALAR
#undef NAME

#define SCALAR double
#define NAME(function) function##_f64
#include __FILE__
#undef SCALAR
#undef NAME

#else

/* h_t = decay_t * h_{t-1} + u_t * B_t from h_{-1} = start (B, G, N, C), into states. */
void NAME(states)(const SCALAR *restrict decay, const SCALAR *restrict u, const SCALAR *restrict maps,
                  const SCALAR *restrict start, SCALAR *restrict states, ptrdiff_t batch, ptrdiff_t steps,
                  ptrdiff_t groups, ptrdiff_t n_states, ptrdiff_t channels) {
    ptrdiff_t lanes = groups * n_states * channels;
    for (ptrdiff_t b = 0; b < batch; b++) {
        const SCALAR *previous = start + b * lanes;
        for (ptrdiff_t t = 0; t < steps; t++) {
            ptrdiff_t step = b * steps + t;
            const SCALAR *a_t = decay + step * lanes;
            SCALAR *h_t = states + step * lanes;
            for (ptrdiff_t k = 0; k < groups; k++) {
                const SCALAR *u_k = u + (step * groups + k) * channels;
                for (ptrdiff_t n = 0; n < n_states; n++) {
                    SCALAR map = maps[(step * groups + k) * n_states + n];
                    ptrdiff_t at = (k * n_states + n) * channels;
                    for (ptrdiff_t c = 0; c < channels; c++)
                        h_t[at + c] = a_t[at + c] * previous[at + c] + u_k[c] * map;
                }
            }
            previous = h_t;
        }
    }
}

/* Backwards from the last step: the adjoint g_t += decay_{t+1} * g_{t+1} in place (g holds C_t dy_t, and the
   gradient from after the chunk at its last step), then through the decay, with dlog = g_t decay_t h_{t-1}
   (h_{-1} = start): ddelta_t = sum_n dlog A (written) and dA += sum_t dlog delta_t (added to). */
void NAME(adjoints)(const SCALAR *restrict decay, const SCALAR *restrict states, const SCALAR *restrict start,
                    SCALAR *restrict g, const SCALAR *restrict delta, const SCALAR *restrict A,
                    SCALAR *restrict ddelta, SCALAR *restrict dA, ptrdiff_t batch, ptrdiff_t steps,
                    ptrdiff_t groups, ptrdiff_t n_states, ptrdiff_t channels) {
    ptrdiff_t lanes = groups * n_states * channels;
    for (ptrdiff_t b = 0; b < batch; b++) {
        for (ptrdiff_t t = steps - 1; t >= 0; t--) {
            ptrdiff_t step = b * steps + t;
            const SCALAR *a_t = decay + step * lanes;
            const SCALAR *previous = t > 0 ? states + (step - 1) * lanes : start + b * lanes;
            SCALAR *g_t = g + step * lanes;
            if (t < steps - 1) {
                const SCALAR *a_next = decay + (step + 1) * lanes;
                const SCALAR *g_next = g + (step + 1) * lanes;
                for (ptrdiff_t i = 0; i < lanes; i++) g_t[i] += a_next[i] * g_next[i];
            }
            for (ptrdiff_t k = 0; k < groups; k++) {
                SCALAR *ddelta_t = ddelta + (step * groups + k) * channels;
                const SCALAR *delta_t = delta + (step * groups + k) * channels;
                for (ptrdiff_t c = 0; c < channels; c++) ddelta_t[c] = 0;
                for (ptrdiff_t n = 0; n < n_states; n++) {
                    ptrdiff_t at = (k * n_states + n) * channels;
                    for (ptrdiff_t c = 0; c < channels; c++) {
                        SCALAR dlog = g_t[at + c] * a_t[at + c] * previous[at + c];
                        ddelta_t[c] += dlog * A[at + c];
                        dA[at + c] += dlog * delta_t[c];
                    }
                }
            }
        }
    }
}

#endif
