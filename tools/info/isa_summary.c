#include "isa_summary.h"

#include <stdlib.h>

#include "posenc.h"

typedef int (*isa_predicate)(posenc_isa isa);

static void print_isa_list(FILE *out, const char *label, isa_predicate has) {
  fprintf(out, "  %-10s", label);
  for (int i = 0; i < POSENC_ISA_COUNT; ++i)
    if (has((posenc_isa)i)) fprintf(out, " %s", posenc_isa_name((posenc_isa)i));
  fputc('\n', out);
}

/* Why an ISA named in POSENC_ISA could not be used. */
static const char *fallback_reason(posenc_isa requested) {
  if (requested == POSENC_ISA_COUNT) return "is not an ISA name";
  if (!posenc_isa_compiled(requested)) return "is not compiled into this build";
  return "is not supported by this CPU/OS";
}

static void print_selection(FILE *out) {
  posenc_isa requested;
  const posenc_isa_source source = posenc_isa_selection(&requested);
  const char *active = posenc_isa_name(posenc_active_isa());
  const char *env = getenv("POSENC_ISA");
  switch (source) {
    case POSENC_ISA_SOURCE_AUTO:
      fprintf(out, "  %-10s %s (the best available; POSENC_ISA not set)\n", "active", active);
      break;
    case POSENC_ISA_SOURCE_ENV:
      fprintf(out, "  %-10s %s (forced by POSENC_ISA=%s)\n", "active", active, env ? env : "");
      break;
    case POSENC_ISA_SOURCE_ENV_FALLBACK:
      fprintf(out, "  %-10s %s (FALLBACK: POSENC_ISA=%s %s; using the best available)\n", "active",
              active, env ? env : "", fallback_reason(requested));
      break;
    case POSENC_ISA_SOURCE_API:
      fprintf(out, "  %-10s %s (set by posenc_set_isa())\n", "active", active);
      break;
  }
}

void posenc_print_isa_summary(FILE *out) {
  fprintf(out, "posenc %s (built against %s)\n", posenc_version(), POSENC_VERSION_STRING);
  fprintf(out, "  %-10s %s\n", "cpu", posenc_cpu_name());
  fprintf(out, "  %-10s %s\n", "features", posenc_cpu_features());
  if (posenc_cpu_sve_vector_bits())
    fprintf(out, "  %-10s %u bits\n", "sve length", posenc_cpu_sve_vector_bits());
  print_isa_list(out, "compiled", posenc_isa_compiled);
  print_isa_list(out, "available", posenc_isa_available);
  print_selection(out);
  /* Which tier serves each kernel (include/posenc.h: a tier may leave a kernel to a lower
   * one), "kernel=tier" four to a line. */
  for (int k = 0; k < POSENC_KERNEL_COUNT; ++k) {
    const posenc_kernel kernel = (posenc_kernel)k;
    if (k % 4 == 0) fprintf(out, "  %-10s", k == 0 ? "kernels" : "");
    fprintf(out, " %s=%s", posenc_kernel_name(kernel), posenc_isa_name(posenc_kernel_isa(kernel)));
    if (k % 4 == 3 || k + 1 == POSENC_KERNEL_COUNT) fputc('\n', out);
  }
}
