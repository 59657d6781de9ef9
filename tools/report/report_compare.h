// `posenc-report compare a.json b.json ...`: the rows of several saved reports (other CPUs,
// builds or settings) side by side, GB/s and the ratio to the first file, and a plot.
#ifndef POSENC_TOOLS_REPORT_COMPARE_H
#define POSENC_TOOLS_REPORT_COMPARE_H

namespace posenc_report {

// argv: the arguments after "compare". Returns the exit status.
int RunCompare(int argc, char** argv);

}  // namespace posenc_report

#endif  // POSENC_TOOLS_REPORT_COMPARE_H
