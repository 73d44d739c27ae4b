#ifndef CFUZZDRIVER_H
#define CFUZZDRIVER_H

#include <stddef.h>
#include <stdint.h>

/// libFuzzer's entry for programs that keep their own `main` (compiler-rt's FuzzerInterface.h). The fuzz
/// executables link with `-sanitize=fuzzer`, which supplies this function.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
