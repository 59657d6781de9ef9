/* posenc-info: what posenc sees on this machine and which variant its kernels run.
 * Usage: posenc-info   (set POSENC_ISA=scalar|sse4|avx2|avx512|neon to force one) */
#include <stdio.h>

#include "isa_summary.h"

int main(int argc, char **argv) {
  if (argc > 1) {
    fprintf(stderr, "usage: %s\n  (POSENC_ISA=<isa> forces a variant)\n", argv[0]);
    return 2;
  }
  posenc_print_isa_summary(stdout);
  return 0;
}
