#include "CBulwarkVector.h"

#include <stdlib.h>
#include <string.h>

// The tables and their making are plain C; only detecting the processor and running the kernel need x86-64.
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#define BULWARK_HEX_X86 1
#else
#define BULWARK_HEX_X86 0
#endif

/// For each group of sixteen bytes, the kernel builds one 64-byte vector of everything an output byte can be: the
/// sixteen input bytes (0-15), their high digits (16-31), their low digits (32-47) and the prefix and suffix (48-63,
/// four bytes repeated). Each half of the group (8 bytes, whose escaped lanes form an 8-bit mask) is then written with
/// one byte permutation of that vector, whose indexes `permutations[mask]` lays out, and one 64-byte store. The upper
/// half permutes the vector with each 16-byte lane rotated by 8, which puts its bytes where the table expects the
/// lower half's.
struct bulwark_hex_escape {
    uint8_t permutations[256][64];
    uint8_t lengths[256];
    /// Bit `h` of row[l] (row 0 for bytes below 0x80, row 1 for the others) is set if byte `(h << 4) | l` (`h` taken
    /// modulo 8) is of the class.
    uint8_t escapeRows[2][16];
    uint8_t stopRows[2][16];
    /// Prefix and suffix, as the four bytes at 48-51 of the vector.
    uint32_t affixes;
};

bulwark_hex_escape *bulwark_hex_escape_create(
    const uint8_t *classes,
    const uint8_t *prefix,
    intptr_t prefixLength,
    int suffix
) {
    if (prefixLength < 1 || prefixLength > 3 || suffix < -1 || suffix > 255) return NULL;
    if (!bulwark_hex_escape_supported()) return NULL;
    bulwark_hex_escape *kernel = aligned_alloc(64, (sizeof(bulwark_hex_escape) + 63) & ~(size_t)63);
    if (kernel == NULL) return NULL;
    memset(kernel, 0, sizeof(*kernel));
    for (int byte = 0; byte < 256; byte++) {
        uint8_t bit = (uint8_t)(1u << ((byte >> 4) & 7));
        if (classes[byte] == BULWARK_HEX_ESCAPE) kernel->escapeRows[byte >> 7][byte & 15] |= bit;
        if (classes[byte] == BULWARK_HEX_STOP) kernel->stopRows[byte >> 7][byte & 15] |= bit;
    }
    uint8_t affixes[4] = {0, 0, 0, 0};
    memcpy(affixes, prefix, (size_t)prefixLength);
    affixes[3] = suffix < 0 ? 0 : (uint8_t)suffix;
    memcpy(&kernel->affixes, affixes, 4);
    for (int mask = 0; mask < 256; mask++) {
        int length = 0;
        for (int lane = 0; lane < 8; lane++) {
            if (mask >> lane & 1) {
                for (int k = 0; k < prefixLength; k++) kernel->permutations[mask][length++] = (uint8_t)(48 + k);
                kernel->permutations[mask][length++] = (uint8_t)(16 + lane);
                kernel->permutations[mask][length++] = (uint8_t)(32 + lane);
                if (suffix >= 0) kernel->permutations[mask][length++] = 51;
            } else {
                kernel->permutations[mask][length++] = (uint8_t)lane;
            }
        }
        kernel->lengths[mask] = (uint8_t)length;  // at most 8 * 6 = 48
    }
    return kernel;
}

void bulwark_hex_escape_destroy(bulwark_hex_escape *kernel) { free(kernel); }

#if BULWARK_HEX_X86

#include <cpuid.h>
#include <immintrin.h>

#define BULWARK_HEX_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi")))

/// XCR0 (the register state the operating system saves): XMM, YMM, opmask and both halves of the ZMM registers.
static uint64_t bulwark_xgetbv0(void) {
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((uint64_t)edx << 32) | eax;
}

bool bulwark_hex_escape_supported(void) {
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & (1u << 27))) return false;  // OSXSAVE
    if ((bulwark_xgetbv0() & 0xE6) != 0xE6) return false;
    if (__get_cpuid_max(0, 0) < 7) return false;
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    const unsigned avx512 = (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31);  // F, DQ, BW, VL
    return (ebx & avx512) == avx512 && (ecx & (1u << 1));  // VBMI
}

/// The lanes of `bytes` whose class has `rows` set, one bit per lane.
BULWARK_HEX_TARGET static inline unsigned bulwark_hex_lanes(
    __m128i lowNibbles,
    __m128i bits,
    __m128i highLanes,
    const uint8_t rows[2][16]
) {
    __m128i low = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)rows[0]), lowNibbles);
    __m128i high = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)rows[1]), lowNibbles);
    __m128i row = _mm_blendv_epi8(low, high, highLanes);
    return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(row, bits), bits));
}

/// Only ever called with a kernel, which `bulwark_hex_escape_create` makes only where the processor can run it.
BULWARK_HEX_TARGET void bulwark_hex_escape_run(
    const bulwark_hex_escape *kernel,
    const uint8_t *source,
    intptr_t *indexPointer,
    intptr_t end,
    uint8_t *output,
    intptr_t *writtenPointer
) {
    const __m128i nibble = _mm_set1_epi8(0x0F);
    const __m128i powers = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
    const __m128i digits =
        _mm_setr_epi8('0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'A', 'B', 'C', 'D', 'E', 'F');
    const __m128i affixes = _mm_set1_epi32((int)kernel->affixes);
    intptr_t index = *indexPointer;
    uint8_t *out = output + *writtenPointer;
    while (index < end) {
        __m128i bytes = _mm_loadu_si128((const __m128i *)(source + index));
        __m128i lowNibbles = _mm_and_si128(bytes, nibble);
        __m128i highNibbles = _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble);
        __m128i bits = _mm_shuffle_epi8(powers, highNibbles);
        __m128i highLanes = _mm_cmplt_epi8(bytes, _mm_setzero_si128());
        if (bulwark_hex_lanes(lowNibbles, bits, highLanes, kernel->stopRows) != 0) break;
        unsigned escaped = bulwark_hex_lanes(lowNibbles, bits, highLanes, kernel->escapeRows);
        if (escaped == 0) {
            _mm_storeu_si128((__m128i *)out, bytes);
            out += 16;
            index += 16;
            continue;
        }
        __m512i all = _mm512_castsi128_si512(bytes);
        all = _mm512_inserti64x2(all, _mm_shuffle_epi8(digits, highNibbles), 1);
        all = _mm512_inserti64x2(all, _mm_shuffle_epi8(digits, lowNibbles), 2);
        all = _mm512_inserti64x2(all, affixes, 3);
        unsigned low = escaped & 0xFF, high = escaped >> 8;
        __m512i first = _mm512_permutexvar_epi8(_mm512_load_si512(kernel->permutations[low]), all);
        _mm512_storeu_si512(out, first);
        out += kernel->lengths[low];
        __m512i rotated = _mm512_alignr_epi8(all, all, 8);
        __m512i second = _mm512_permutexvar_epi8(_mm512_load_si512(kernel->permutations[high]), rotated);
        _mm512_storeu_si512(out, second);
        out += kernel->lengths[high];
        index += 16;
    }
    *indexPointer = index;
    *writtenPointer = out - output;
}

#else

bool bulwark_hex_escape_supported(void) { return false; }

// Never called: `bulwark_hex_escape_create` makes no kernel here.
void bulwark_hex_escape_run(
    const bulwark_hex_escape *kernel,
    const uint8_t *source,
    intptr_t *index,
    intptr_t end,
    uint8_t *output,
    intptr_t *written
) {
    (void)kernel;
    (void)source;
    (void)index;
    (void)end;
    (void)output;
    (void)written;
}

#endif
