/* libfuzzer.c: the fuzzer's entry for libFuzzer (clang -fsanitize=fuzzer,address): the same
 * model, without fork (libFuzzer's process must stay one). */
#include "fuzz_api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 16)) return 0;
  return mtfz_run(data, size, 0);
}
