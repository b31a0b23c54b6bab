/* The step loops of a diagonal linear recurrence, h_t = a_t * h_{t-1} + b_t, compiled by zoo/nn/recurrence.py.

   Eager PyTorch takes each step as one call of a few microseconds, mostly dispatch, for a few thousand numbers;
   here a step is one pass of multiply-adds over contiguous lanes, which the compiler vectorises. Every tensor is
   (batch, steps, lanes), contiguous; each sum is taken in the order the PyTorch loop takes it (equal to rounding:
   PyTorch's vectorised multiply-add may round once where this rounds twice). */

#include <stddef.h>

#define RECURRENCE(type, suffix)                                                                                \
    /* b_t <- a_t * b_{t-1} + b_t in place, from b_{-1} = start (batch, lanes): the states over the inputs. */  \
    void forward_##suffix(const type *a, type *b, const type *start, ptrdiff_t batch, ptrdiff_t steps,          \
                          ptrdiff_t lanes) {                                                                    \
        for (ptrdiff_t n = 0; n < batch; n++) {                                                                 \
            const type *previous = start + n * lanes;                                                           \
            for (ptrdiff_t t = 0; t < steps; t++) {                                                             \
                const type *a_t = a + (n * steps + t) * lanes;                                                  \
                type *b_t = b + (n * steps + t) * lanes;                                                        \
                for (ptrdiff_t i = 0; i < lanes; i++) b_t[i] += a_t[i] * previous[i];                           \
                previous = b_t;                                                                                 \
            }                                                                                                   \
        }                                                                                                       \
    }                                                                                                           \
    /* g_t <- a_{t+1} * g_{t+1} + g_t in place, from the last step (left as it is) back: the adjoint states. */ \
    void backward_##suffix(const type *a, type *g, ptrdiff_t batch, ptrdiff_t steps, ptrdiff_t lanes) {         \
        for (ptrdiff_t n = 0; n < batch; n++) {                                                                 \
            for (ptrdiff_t t = steps - 2; t >= 0; t--) {                                                        \
                const type *a_next = a + (n * steps + t + 1) * lanes;                                           \
                const type *g_next = g + (n * steps + t + 1) * lanes;                                           \
                type *g_t = g + (n * steps + t) * lanes;                                                        \
                for (ptrdiff_t i = 0; i < lanes; i++) g_t[i] += a_next[i] * g_next[i];                          \
            }                                                                                                   \
        }                                                                                                       \
    }

RECURRENCE(float, f32)
RECURRENCE(double, f64)
