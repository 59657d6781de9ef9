/* The CPU and ISA summary printed by posenc-info and posenc-report. */
#ifndef POSENC_TOOLS_ISA_SUMMARY_H
#define POSENC_TOOLS_ISA_SUMMARY_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Prints the library version, CPU name and features, the ISAs compiled / available /
 * active, and how the active one was chosen. Call before anything selects an ISA through
 * posenc_set_isa(), or the last line reports that call instead of POSENC_ISA. */
void posenc_print_isa_summary(FILE *out);

#ifdef __cplusplus
}
#endif

#endif /* POSENC_TOOLS_ISA_SUMMARY_H */
