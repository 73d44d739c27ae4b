// Vector kernels for Bulwark's output encoders. Swift cannot compile a function for a processor feature the whole
// target does not assume, so the kernels that need one are C, compiled for it function by function, and chosen at
// run time: `bulwark_hex_escape_create` returns NULL for a path the processor (or the architecture) cannot run, and
// the Swift engine then does all of the work, as it does for every table the kernel does not fit.

#ifndef C_BULWARK_VECTOR_H
#define C_BULWARK_VECTOR_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The tables of one hexadecimal escape kernel, made by `bulwark_hex_escape_create`.
typedef struct bulwark_hex_escape bulwark_hex_escape;

/// What becomes of one byte value in a hexadecimal escape kernel.
enum {
    /// The byte is copied.
    BULWARK_HEX_COPY = 0,
    /// The byte is replaced by the prefix, its two upper-case hexadecimal digits and the suffix.
    BULWARK_HEX_ESCAPE = 1,
    /// The byte is left to the caller: the kernel stops before a group of sixteen bytes that holds one.
    BULWARK_HEX_STOP = 2,
    /// 0xE2 only, the first byte of U+2028 and U+2029, which the caller escapes: the AVX2 and AVX-512 kernels copy it
    /// and stop before a group in which one of the two starts (0xE2 0x80 0xA8 or 0xE2 0x80 0xA9, the last two bytes
    /// possibly in the next group); the other paths stop before a group that holds it, as for `BULWARK_HEX_STOP`.
    BULWARK_HEX_LINE_SEPARATOR = 3,
};

/// The ways a kernel can run. The output is the same byte for byte on every path.
enum {
    /// No kernel: the Swift engine does all of the work.
    BULWARK_VECTOR_SCALAR = 0,
    /// x86-64's baseline: every byte of a group written through a table, one 8-byte store each, without a branch (in
    /// the Swift engine's dense layout only; in its sparse one, the engine copies groups without an escape itself).
    BULWARK_VECTOR_SSE2 = 1,
    /// x86-64 with AVX2: each quarter of a group written with one byte shuffle and one 32-byte store.
    BULWARK_VECTOR_AVX2 = 2,
    /// x86-64 with AVX-512 VBMI: each half of a group written with one byte permutation and one 64-byte store.
    BULWARK_VECTOR_AVX512_VBMI = 3,
    /// arm64: each half of a group written with three 64-byte table lookups and three 16-byte stores.
    BULWARK_VECTOR_NEON = 4,
};

/// Whether this processor and operating system can run the path (`BULWARK_VECTOR_SCALAR` always can).
bool bulwark_vector_supported(int path);

/// A kernel for the byte classes `classes` (256 entries, one of the values above), escapes written as `prefix` (1 to
/// 3 bytes), the digits, and `suffix` (a byte, or -1 for none), running on `path`; NULL for `BULWARK_VECTOR_SCALAR`,
/// a path the processor cannot run, or arguments that do not fit (`BULWARK_HEX_LINE_SEPARATOR` for a byte other than
/// 0xE2). Free it with `bulwark_hex_escape_destroy`.
bulwark_hex_escape *_Nullable bulwark_hex_escape_create(
    const uint8_t *_Nonnull classes,
    const uint8_t *_Nonnull prefix,
    intptr_t prefixLength,
    int suffix,
    int path
);

void bulwark_hex_escape_destroy(bulwark_hex_escape *_Nullable kernel);

/// Encodes the groups of sixteen bytes of `source` that start at `*index` and before `end`, the output of the byte at
/// `*index` going to `output + *written`; stops before a group holding a byte of class `BULWARK_HEX_STOP` (or, for
/// `BULWARK_HEX_LINE_SEPARATOR`, one in which U+2028 or U+2029 starts), and moves `*index` and `*written` past what
/// it encoded.
///
/// Reads the sixteen bytes of every group it looks at (the caller must have them, even past `end`), and the two
/// after them when a class is `BULWARK_HEX_LINE_SEPARATOR` (18 bytes from a group's start). Stores at most 56 bytes
/// past the output of what it encoded: 64 bytes from the output of every 8 input bytes (AVX-512), 32 from that of
/// every 4 (AVX2), 48 from that of every 8 (NEON), 8 from that of every byte (SSE2); except that the SSE2 kernel
/// also writes the group it stops before, as if it encoded it (up to 16 escapes and 8 bytes past them), so the
/// caller must have room for the output of every byte up to `end` plus sixteen, at the longest escape each.
void bulwark_hex_escape_run(
    const bulwark_hex_escape *_Nonnull kernel,
    const uint8_t *_Nonnull source,
    intptr_t *_Nonnull index,
    intptr_t end,
    uint8_t *_Nonnull output,
    intptr_t *_Nonnull written
);

#ifdef __cplusplus
}
#endif

#endif
