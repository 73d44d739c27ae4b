#include "CBulwarkVector.h"

#include <stdlib.h>
#include <string.h>

// The tables and their making are plain C; detecting the processor and running the vector kernels need x86-64 (or
// arm64 for NEON). The SSE2 kernel's loop is plain C too, with SSE2 only for its copies.
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#define BULWARK_HEX_X86 1
#else
#define BULWARK_HEX_X86 0
#endif
#if defined(__aarch64__) && defined(__ARM_NEON) && (defined(__clang__) || defined(__GNUC__))
#define BULWARK_HEX_NEON 1
#else
#define BULWARK_HEX_NEON 0
#endif

/// For each group of sixteen bytes, the kernel builds one 64-byte vector of everything an output byte can be: the
/// sixteen input bytes (0-15), their high digits (16-31), their low digits (32-47) and the prefix and suffix (48-63,
/// four bytes repeated). Each half of the group (8 bytes, whose escaped lanes form an 8-bit mask) is then written with
/// one byte permutation of that vector, whose indexes `permutations[mask]` lays out, and one 64-byte store. The upper
/// half permutes the vector with each 16-byte lane rotated by 8, which puts its bytes where the table expects the
/// lower half's.
/// In an entry of `entries` (little-endian: the SSE2 kernel runs on x86-64 only): the bits of the text written (bytes
/// 0-5), and the bit that marks a byte that stops the kernel (in byte 6, never part of the text); the length is byte 7.
#define BULWARK_HEX_TEXT_BITS 0x0000FFFFFFFFFFFFull
#define BULWARK_HEX_STOP_BIT 0x0080000000000000ull

struct bulwark_hex_escape {
    /// AVX-512 and NEON: for each mask of a half, its permutation (above). AVX2: the shuffles of the half's two
    /// quarters, 32 bytes each (see `bulwark_hex_make_half_shuffles`).
    uint8_t permutations[256][64];
    /// AVX-512 and NEON: for each mask of a half, the length of its output.
    uint8_t lengths[256];
    /// AVX2: for each mask of a half, the length of its first quarter's output and of the whole half's.
    uint8_t halfLengths[256][2];
    /// Bit `h` of row[l] (row 0 for bytes below 0x80, row 1 for the others) is set if byte `(h << 4) | l` (`h` taken
    /// modulo 8) is of the class.
    uint8_t escapeRows[2][16];
    uint8_t stopRows[2][16];
    /// Prefix and suffix, as the four bytes at 48-51 of the vector (repeated up to 63: NEON's fourth table), and at
    /// 12-15 of the AVX2 quarters.
    uint32_t affixes;
    /// The SSE2 kernel's table: for each byte, what is written for it (the byte itself, or its escape) in bytes 0-5 of
    /// the word in memory order, `BULWARK_HEX_STOP_BIT` if it stops the kernel, and the length in bits 56-63.
    uint64_t entries[256];
    /// The path the kernel runs (`BULWARK_VECTOR_*`).
    int path;
    /// Whether 0xE2 is of class `BULWARK_HEX_LINE_SEPARATOR` on a path that looks for U+2028 and U+2029 itself
    /// (AVX2, AVX-512); on the others it is a stop byte.
    bool checksLineSeparators;
};

/// The AVX2 kernel's tables. It writes each quarter of a group (4 bytes) with one in-lane byte shuffle of a 32-byte
/// vector whose two lanes both hold the quarter's bytes (0-3), their high digits (4-7), their low digits (8-11) and
/// the affixes (12-15): the shuffle of a quarter whose escaped lanes form the 4-bit mask `m` lays out its first 16
/// output bytes in the lower lane and the next (at most 8) in the upper one, 0x80 (zero) past the output. The
/// shuffles of both quarters of a half are looked up at once, by the half's 8-bit mask.
static void bulwark_hex_make_half_shuffles(bulwark_hex_escape *kernel, intptr_t prefixLength, int suffix) {
    uint8_t shuffles[16][32];
    uint8_t lengths[16];
    for (int mask = 0; mask < 16; mask++) {
        int length = 0;
        memset(shuffles[mask], 0x80, 32);
        for (int lane = 0; lane < 4; lane++) {
            if (mask >> lane & 1) {
                for (int k = 0; k < prefixLength; k++) shuffles[mask][length++] = (uint8_t)(12 + k);
                shuffles[mask][length++] = (uint8_t)(4 + lane);
                shuffles[mask][length++] = (uint8_t)(8 + lane);
                if (suffix >= 0) shuffles[mask][length++] = 15;
            } else {
                shuffles[mask][length++] = (uint8_t)lane;
            }
        }
        lengths[mask] = (uint8_t)length;  // at most 4 * 6 = 24
    }
    for (int mask = 0; mask < 256; mask++) {
        memcpy(kernel->permutations[mask], shuffles[mask & 15], 32);
        memcpy(kernel->permutations[mask] + 32, shuffles[mask >> 4], 32);
        kernel->halfLengths[mask][0] = lengths[mask & 15];
        kernel->halfLengths[mask][1] = (uint8_t)(lengths[mask & 15] + lengths[mask >> 4]);
    }
}

bulwark_hex_escape *bulwark_hex_escape_create(
    const uint8_t *classes,
    const uint8_t *prefix,
    intptr_t prefixLength,
    int suffix,
    int path
) {
    if (prefixLength < 1 || prefixLength > 3 || suffix < -1 || suffix > 255) return NULL;
    if (path == BULWARK_VECTOR_SCALAR || !bulwark_vector_supported(path)) return NULL;
    for (int byte = 0; byte < 256; byte++) {
        if (classes[byte] > BULWARK_HEX_LINE_SEPARATOR) return NULL;
        if (classes[byte] == BULWARK_HEX_LINE_SEPARATOR && byte != 0xE2) return NULL;
    }
    const bool checksLineSeparators = classes[0xE2] == BULWARK_HEX_LINE_SEPARATOR
        && (path == BULWARK_VECTOR_AVX2 || path == BULWARK_VECTOR_AVX512_VBMI);
    bulwark_hex_escape *kernel = aligned_alloc(64, (sizeof(bulwark_hex_escape) + 63) & ~(size_t)63);
    if (kernel == NULL) return NULL;
    memset(kernel, 0, sizeof(*kernel));
    // The class each byte has on this path: a line separator's first byte is copied where the kernel looks for the
    // separators itself, and stops it elsewhere.
    uint8_t effective[256];
    for (int byte = 0; byte < 256; byte++) {
        effective[byte] = classes[byte];
        if (classes[byte] == BULWARK_HEX_LINE_SEPARATOR) {
            effective[byte] = checksLineSeparators ? BULWARK_HEX_COPY : BULWARK_HEX_STOP;
        }
    }
    kernel->checksLineSeparators = checksLineSeparators;
    for (int byte = 0; byte < 256; byte++) {
        uint8_t bit = (uint8_t)(1u << ((byte >> 4) & 7));
        if (effective[byte] == BULWARK_HEX_ESCAPE) kernel->escapeRows[byte >> 7][byte & 15] |= bit;
        if (effective[byte] == BULWARK_HEX_STOP) kernel->stopRows[byte >> 7][byte & 15] |= bit;
    }
    uint8_t affixes[4] = {0, 0, 0, 0};
    memcpy(affixes, prefix, (size_t)prefixLength);
    affixes[3] = suffix < 0 ? 0 : (uint8_t)suffix;
    memcpy(&kernel->affixes, affixes, 4);
    if (path == BULWARK_VECTOR_AVX2) {
        bulwark_hex_make_half_shuffles(kernel, prefixLength, suffix);
    } else if (path == BULWARK_VECTOR_AVX512_VBMI || path == BULWARK_VECTOR_NEON) {
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
    }
    static const char hex[] = "0123456789ABCDEF";
    for (int byte = 0; byte < 256; byte++) {
        uint8_t text[8] = {(uint8_t)byte, 0, 0, 0, 0, 0, 0, 0};
        int length = 1;
        if (effective[byte] == BULWARK_HEX_ESCAPE) {
            length = 0;
            for (int k = 0; k < prefixLength; k++) text[length++] = prefix[k];
            text[length++] = (uint8_t)hex[byte >> 4];
            text[length++] = (uint8_t)hex[byte & 15];
            if (suffix >= 0) text[length++] = (uint8_t)suffix;
        }
        uint64_t entry;
        memcpy(&entry, text, 8);
        entry &= BULWARK_HEX_TEXT_BITS;
        if (effective[byte] == BULWARK_HEX_STOP) entry |= BULWARK_HEX_STOP_BIT;
        kernel->entries[byte] = entry | (uint64_t)length << 56;
    }
    kernel->path = path;
    return kernel;
}

void bulwark_hex_escape_destroy(bulwark_hex_escape *kernel) { free(kernel); }

/// The SSE2 kernel (plain C, on x86-64's baseline): every byte of a group written through `entries`, one 8-byte
/// store each, without a branch; a group with a stop byte is written too, but left out of what was encoded (the
/// caller writes over it). Stores at most 8 bytes past the output of what it encoded (the escapes are at most 6 bytes,
/// so the output of a group with a stop byte stays within that of its 16 bytes).
static void bulwark_hex_escape_run_portable(
    const bulwark_hex_escape *kernel,
    const uint8_t *source,
    intptr_t *indexPointer,
    intptr_t end,
    uint8_t *output,
    intptr_t *writtenPointer
) {
    intptr_t index = *indexPointer;
    uint8_t *out = output + *writtenPointer;
    while (index < end) {
        const uint8_t *group = source + index;
        uint8_t *groupOut = out;
        uint64_t flags = 0;
        for (int lane = 0; lane < 16; lane++) {
            uint64_t entry = kernel->entries[group[lane]];
            memcpy(groupOut, &entry, 8);
            groupOut += entry >> 56;
            flags |= entry;
        }
        if (flags & BULWARK_HEX_STOP_BIT) break;
        out = groupOut;
        index += 16;
    }
    *indexPointer = index;
    *writtenPointer = out - output;
}

#if BULWARK_HEX_X86

#include <cpuid.h>
#include <immintrin.h>

#define BULWARK_HEX_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi")))
#define BULWARK_HEX_AVX2_TARGET __attribute__((target("avx2")))

/// XCR0 (the register state the operating system saves): XMM, YMM, opmask and both halves of the ZMM registers.
static uint64_t bulwark_xgetbv0(void) {
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((uint64_t)edx << 32) | eax;
}

/// Whether the processor has AVX-512 VBMI (`avx512`) or AVX2, and the operating system saves its registers.
static bool bulwark_x86_has(bool avx512) {
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & (1u << 27)) || !(ecx & (1u << 28))) return false;
    const uint64_t state = avx512 ? 0xE6 : 0x06;  // OSXSAVE and AVX above; XMM, YMM (and opmask, ZMM) here
    if ((bulwark_xgetbv0() & state) != state) return false;
    if (__get_cpuid_max(0, 0) < 7) return false;
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    if (!avx512) return (ebx & (1u << 5)) != 0;  // AVX2
    const unsigned features = (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31);  // F, DQ, BW, VL
    return (ebx & features) == features && (ecx & (1u << 1));  // VBMI
}

bool bulwark_vector_supported(int path) {
    switch (path) {
        case BULWARK_VECTOR_SCALAR:
        case BULWARK_VECTOR_SSE2: return true;  // the x86-64 baseline
        case BULWARK_VECTOR_AVX2: return bulwark_x86_has(false);
        case BULWARK_VECTOR_AVX512_VBMI: return bulwark_x86_has(true);
        default: return false;
    }
}

/// For each lane of a group, its bit of `bits` (that of its byte's high nibble) if the byte is of the class whose
/// rows are `low` (bytes below 0x80) and `high` (the others), and 0 otherwise: `index` is each byte's low nibble with
/// its top bit, and `highIndex` the same with the top bit flipped, so that each row's lookup gives 0 in the lanes of
/// the other half.
BULWARK_HEX_AVX2_TARGET static inline __m128i bulwark_hex_class(
    __m128i index,
    __m128i highIndex,
    __m128i bits,
    __m128i low,
    __m128i high
) {
    __m128i row = _mm_or_si128(_mm_shuffle_epi8(low, index), _mm_shuffle_epi8(high, highIndex));
    return _mm_and_si128(row, bits);
}

/// Whether U+2028 or U+2029 (0xE2 0x80 0xA8 or 0xA9) starts in the group at `group`, whose bytes are `bytes`; reads
/// the two bytes after the group.
BULWARK_HEX_AVX2_TARGET static inline bool bulwark_hex_has_line_separator(const uint8_t *group, __m128i bytes) {
    __m128i second = _mm_loadu_si128((const __m128i *)(group + 1));
    __m128i third = _mm_loadu_si128((const __m128i *)(group + 2));
    __m128i lead = _mm_cmpeq_epi8(bytes, _mm_set1_epi8((char)0xE2));
    __m128i middle = _mm_cmpeq_epi8(second, _mm_set1_epi8((char)0x80));
    // 0xA8 and 0xA9 differ only in their lowest bit.
    __m128i last = _mm_cmpeq_epi8(_mm_or_si128(third, _mm_set1_epi8(1)), _mm_set1_epi8((char)0xA9));
    __m128i starts = _mm_and_si128(_mm_and_si128(lead, middle), last);
    return !_mm_testz_si128(starts, starts);
}

/// What the AVX2 and AVX-512 kernels classify bytes with, loaded once per run: in registers, the rows would otherwise
/// be read again after every store to the output (which, as far as the compiler knows, could change them).
typedef struct {
    __m128i nibble, powers, rowMask, topBit, stopLow, stopHigh, escapeLow, escapeHigh;
    bool checksLineSeparators;
} bulwark_hex_classifier;

BULWARK_HEX_AVX2_TARGET static inline bulwark_hex_classifier bulwark_hex_classifier_make(
    const bulwark_hex_escape *kernel
) {
    bulwark_hex_classifier classifier = {
        .nibble = _mm_set1_epi8(0x0F),
        .powers = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128),
        .rowMask = _mm_set1_epi8((char)0x8F),
        .topBit = _mm_set1_epi8((char)0x80),
        .stopLow = _mm_loadu_si128((const __m128i *)kernel->stopRows[0]),
        .stopHigh = _mm_loadu_si128((const __m128i *)kernel->stopRows[1]),
        .escapeLow = _mm_loadu_si128((const __m128i *)kernel->escapeRows[0]),
        .escapeHigh = _mm_loadu_si128((const __m128i *)kernel->escapeRows[1]),
        .checksLineSeparators = kernel->checksLineSeparators,
    };
    return classifier;
}

/// Upper-case hexadecimal digits, by value.
BULWARK_HEX_AVX2_TARGET static inline __m128i bulwark_hex_digits(void) {
    return _mm_setr_epi8('0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'A', 'B', 'C', 'D', 'E', 'F');
}

/// Classifies the group at `group`, whose bytes are `bytes`: false if the kernel stops before it (a stop byte, or a
/// line separator that starts in it); otherwise its bytes' low and high nibbles, and its escaped lanes (one bit each).
BULWARK_HEX_AVX2_TARGET static inline bool bulwark_hex_classify(
    const bulwark_hex_classifier *classifier,
    const uint8_t *group,
    __m128i bytes,
    __m128i *lowNibbles,
    __m128i *highNibbles,
    unsigned *escaped
) {
    *lowNibbles = _mm_and_si128(bytes, classifier->nibble);
    *highNibbles = _mm_and_si128(_mm_srli_epi16(bytes, 4), classifier->nibble);
    __m128i bits = _mm_shuffle_epi8(classifier->powers, *highNibbles);
    __m128i rowIndex = _mm_and_si128(bytes, classifier->rowMask);
    __m128i highRowIndex = _mm_xor_si128(rowIndex, classifier->topBit);
    __m128i stops = bulwark_hex_class(rowIndex, highRowIndex, bits, classifier->stopLow, classifier->stopHigh);
    if (!_mm_testz_si128(stops, bits)) return false;
    if (classifier->checksLineSeparators && bulwark_hex_has_line_separator(group, bytes)) return false;
    __m128i escapes = bulwark_hex_class(rowIndex, highRowIndex, bits, classifier->escapeLow, classifier->escapeHigh);
    *escaped = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(escapes, bits));
    return true;
}

/// Only ever called with a kernel, which `bulwark_hex_escape_create` makes only where the processor can run it.
BULWARK_HEX_TARGET static void bulwark_hex_escape_run_avx512(
    const bulwark_hex_escape *kernel,
    const uint8_t *source,
    intptr_t *indexPointer,
    intptr_t end,
    uint8_t *output,
    intptr_t *writtenPointer
) {
    const bulwark_hex_classifier classifier = bulwark_hex_classifier_make(kernel);
    const __m128i digits = bulwark_hex_digits();
    const __m128i affixes = _mm_set1_epi32((int)kernel->affixes);
    intptr_t index = *indexPointer;
    uint8_t *out = output + *writtenPointer;
    while (index < end) {
        __m128i bytes = _mm_loadu_si128((const __m128i *)(source + index));
        __m128i lowNibbles, highNibbles;
        unsigned escaped;
        if (!bulwark_hex_classify(&classifier, source + index, bytes, &lowNibbles, &highNibbles, &escaped)) break;
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

/// The AVX2 kernel: classified as the AVX-512 one; a group with an escape is written a quarter (4 bytes) at a time,
/// each with one in-lane shuffle of a 32-byte vector and one 32-byte store (see `bulwark_hex_make_half_shuffles`).
BULWARK_HEX_AVX2_TARGET static void bulwark_hex_escape_run_avx2(
    const bulwark_hex_escape *kernel,
    const uint8_t *source,
    intptr_t *indexPointer,
    intptr_t end,
    uint8_t *output,
    intptr_t *writtenPointer
) {
    const bulwark_hex_classifier classifier = bulwark_hex_classifier_make(kernel);
    const __m128i digits = bulwark_hex_digits();
    const __m256i affixes = _mm256_set1_epi32((int)kernel->affixes);
    intptr_t index = *indexPointer;
    uint8_t *out = output + *writtenPointer;
    while (index < end) {
        __m128i bytes = _mm_loadu_si128((const __m128i *)(source + index));
        __m128i lowNibbles, highNibbles;
        unsigned escaped;
        if (!bulwark_hex_classify(&classifier, source + index, bytes, &lowNibbles, &highNibbles, &escaped)) break;
        if (escaped == 0) {
            _mm_storeu_si128((__m128i *)out, bytes);
            out += 16;
            index += 16;
            continue;
        }
        // Both lanes: the bytes, the high digits, the low digits, the affixes; then the four quarters, each laid out
        // as bytes, high digits, low digits, affixes (4 bytes each).
        __m256i all = _mm256_broadcastsi128_si256(bytes);
        __m256i high = _mm256_broadcastsi128_si256(_mm_shuffle_epi8(digits, highNibbles));
        __m256i low = _mm256_broadcastsi128_si256(_mm_shuffle_epi8(digits, lowNibbles));
        __m256i bytesAndHigh01 = _mm256_unpacklo_epi32(all, high);
        __m256i lowAndAffixes01 = _mm256_unpacklo_epi32(low, affixes);
        __m256i bytesAndHigh23 = _mm256_unpackhi_epi32(all, high);
        __m256i lowAndAffixes23 = _mm256_unpackhi_epi32(low, affixes);
        __m256i quarters[4] = {
            _mm256_unpacklo_epi64(bytesAndHigh01, lowAndAffixes01),
            _mm256_unpackhi_epi64(bytesAndHigh01, lowAndAffixes01),
            _mm256_unpacklo_epi64(bytesAndHigh23, lowAndAffixes23),
            _mm256_unpackhi_epi64(bytesAndHigh23, lowAndAffixes23),
        };
        // Both quarters of each half with the shuffles of the half's mask, the second after the first's output.
        for (int half = 0; half < 2; half++) {
            unsigned mask = escaped >> (8 * half) & 0xFF;
            const __m256i *shuffles = (const __m256i *)kernel->permutations[mask];
            _mm256_storeu_si256((__m256i *)out, _mm256_shuffle_epi8(quarters[2 * half], _mm256_load_si256(shuffles)));
            _mm256_storeu_si256(
                (__m256i *)(out + kernel->halfLengths[mask][0]),
                _mm256_shuffle_epi8(quarters[2 * half + 1], _mm256_load_si256(shuffles + 1))
            );
            out += kernel->halfLengths[mask][1];
        }
        index += 16;
    }
    *indexPointer = index;
    *writtenPointer = out - output;
}

void bulwark_hex_escape_run(
    const bulwark_hex_escape *kernel,
    const uint8_t *source,
    intptr_t *index,
    intptr_t end,
    uint8_t *output,
    intptr_t *written
) {
    switch (kernel->path) {
        case BULWARK_VECTOR_AVX512_VBMI:
            bulwark_hex_escape_run_avx512(kernel, source, index, end, output, written);
            break;
        case BULWARK_VECTOR_AVX2: bulwark_hex_escape_run_avx2(kernel, source, index, end, output, written); break;
        default: bulwark_hex_escape_run_portable(kernel, source, index, end, output, written); break;
    }
}

#elif BULWARK_HEX_NEON

#include <arm_neon.h>

bool bulwark_vector_supported(int path) {
    return path == BULWARK_VECTOR_SCALAR || path == BULWARK_VECTOR_NEON;  // NEON is part of arm64
}

/// The lanes of a group whose class has `rows` set, one bit per lane (lane 0 in bit 0).
static inline unsigned bulwark_hex_lanes_neon(
    uint8x16_t lowNibbles,
    uint8x16_t bits,
    uint8x16_t highLanes,
    const uint8_t rows[2][16]
) {
    static const uint8_t powers[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    uint8x16_t low = vqtbl1q_u8(vld1q_u8(rows[0]), lowNibbles);
    uint8x16_t high = vqtbl1q_u8(vld1q_u8(rows[1]), lowNibbles);
    uint8x16_t row = vbslq_u8(highLanes, high, low);
    uint8x16_t lanes = vandq_u8(vceqq_u8(vandq_u8(row, bits), bits), vld1q_u8(powers));
    return vaddv_u8(vget_low_u8(lanes)) | (unsigned)vaddv_u8(vget_high_u8(lanes)) << 8;
}

/// The NEON kernel: the AVX-512 one with `vqtbl4q_u8` (a lookup in 64 bytes, 16 at a time) for the permutation, so
/// three lookups and three 16-byte stores for each half of a group.
static void bulwark_hex_escape_run_neon(
    const bulwark_hex_escape *kernel,
    const uint8_t *source,
    intptr_t *indexPointer,
    intptr_t end,
    uint8_t *output,
    intptr_t *writtenPointer
) {
    static const uint8_t powerBytes[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    static const uint8_t digitBytes[16] = {
        '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'A', 'B', 'C', 'D', 'E', 'F',
    };
    const uint8x16_t nibble = vdupq_n_u8(0x0F);
    const uint8x16_t powers = vld1q_u8(powerBytes);
    const uint8x16_t digits = vld1q_u8(digitBytes);
    const uint8x16_t affixes = vreinterpretq_u8_u32(vdupq_n_u32(kernel->affixes));
    intptr_t index = *indexPointer;
    uint8_t *out = output + *writtenPointer;
    while (index < end) {
        uint8x16_t bytes = vld1q_u8(source + index);
        uint8x16_t lowNibbles = vandq_u8(bytes, nibble);
        uint8x16_t highNibbles = vshrq_n_u8(bytes, 4);
        uint8x16_t bits = vqtbl1q_u8(powers, highNibbles);
        uint8x16_t highLanes = vcltzq_s8(vreinterpretq_s8_u8(bytes));
        if (bulwark_hex_lanes_neon(lowNibbles, bits, highLanes, kernel->stopRows) != 0) break;
        unsigned escaped = bulwark_hex_lanes_neon(lowNibbles, bits, highLanes, kernel->escapeRows);
        if (escaped == 0) {
            vst1q_u8(out, bytes);
            out += 16;
            index += 16;
            continue;
        }
        uint8x16x4_t all = {{bytes, vqtbl1q_u8(digits, highNibbles), vqtbl1q_u8(digits, lowNibbles), affixes}};
        uint8x16x4_t rotated = {{
            vextq_u8(all.val[0], all.val[0], 8),
            vextq_u8(all.val[1], all.val[1], 8),
            vextq_u8(all.val[2], all.val[2], 8),
            affixes,
        }};
        const uint8_t *first = kernel->permutations[escaped & 0xFF];
        for (int part = 0; part < 3; part++) {
            vst1q_u8(out + 16 * part, vqtbl4q_u8(all, vld1q_u8(first + 16 * part)));
        }
        out += kernel->lengths[escaped & 0xFF];
        const uint8_t *second = kernel->permutations[escaped >> 8];
        for (int part = 0; part < 3; part++) {
            vst1q_u8(out + 16 * part, vqtbl4q_u8(rotated, vld1q_u8(second + 16 * part)));
        }
        out += kernel->lengths[escaped >> 8];
        index += 16;
    }
    *indexPointer = index;
    *writtenPointer = out - output;
}

void bulwark_hex_escape_run(
    const bulwark_hex_escape *kernel,
    const uint8_t *source,
    intptr_t *index,
    intptr_t end,
    uint8_t *output,
    intptr_t *written
) {
    if (kernel->path == BULWARK_VECTOR_NEON) {
        bulwark_hex_escape_run_neon(kernel, source, index, end, output, written);
    } else {
        bulwark_hex_escape_run_portable(kernel, source, index, end, output, written);
    }
}

#else

bool bulwark_vector_supported(int path) { return path == BULWARK_VECTOR_SCALAR; }

// Never called: `bulwark_hex_escape_create` makes no kernel here.
void bulwark_hex_escape_run(
    const bulwark_hex_escape *kernel,
    const uint8_t *source,
    intptr_t *index,
    intptr_t end,
    uint8_t *output,
    intptr_t *written
) {
    bulwark_hex_escape_run_portable(kernel, source, index, end, output, written);
}

#endif
