// The ISA functions called with any int, as a C caller may (a C enum holds any value of its
// type). Written in C (raw_isa.c): in C++ an enum value outside the enum's range is undefined
// behaviour, which UBSan reports, so the tests never hold one in a posenc_isa.
#ifndef POSENC_TESTS_SUPPORT_RAW_ISA_H
#define POSENC_TESTS_SUPPORT_RAW_ISA_H

#include <posenc.h>

#ifdef __cplusplus
extern "C" {
#endif

const char *posenc_test_isa_name(int isa);
int posenc_test_isa_compiled(int isa);
int posenc_test_isa_available(int isa);
posenc_status posenc_test_set_isa(int isa);

#ifdef __cplusplus
}
#endif

#endif  // POSENC_TESTS_SUPPORT_RAW_ISA_H
