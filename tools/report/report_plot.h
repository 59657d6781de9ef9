// posenc-report's plots are drawn by tools/report/posenc_plot.py (matplotlib) from the saved JSON.
#ifndef POSENC_TOOLS_REPORT_PLOT_H
#define POSENC_TOOLS_REPORT_PLOT_H

#include <ostream>
#include <string>
#include <vector>

namespace posenc_report {

// Runs posenc_plot.py with `args` under the first Python that has matplotlib: $POSENC_PYTHON
// if set, else python3, else /usr/bin/python3. The script is $POSENC_PLOT_SCRIPT if set, else
// posenc_plot.py beside this executable, else the one in the source tree it was built from.
// Returns true if the script ran and succeeded; otherwise says why on `out` (no plots is
// not an error of the report).
bool RunPlotScript(const std::vector<std::string>& args, std::ostream& out);

}  // namespace posenc_report

#endif  // POSENC_TOOLS_REPORT_PLOT_H
