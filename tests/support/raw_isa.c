/* See raw_isa.h. */
#include "raw_isa.h"

const char *posenc_test_isa_name(int isa) { return posenc_isa_name((posenc_isa)isa); }
int posenc_test_isa_compiled(int isa) { return posenc_isa_compiled((posenc_isa)isa); }
int posenc_test_isa_available(int isa) { return posenc_isa_available((posenc_isa)isa); }
posenc_status posenc_test_set_isa(int isa) { return posenc_set_isa((posenc_isa)isa); }
