/* posenc-info: what posenc sees on this machine and which variant its kernels run.
 * Usage: posenc-info   (POSENC_ISA=<name> forces a tier: any name of the "compiled" line) */
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
