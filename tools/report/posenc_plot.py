#!/usr/bin/env python3
"""Plots of posenc-report's JSON files (matplotlib); posenc-report runs this script itself.

  posenc_plot.py report REPORT.json OUTDIR      OUTDIR/<kernel>.png and .svg for every kernel,
                                                and OUTDIR/overview.png and .svg (all of them)
  posenc_plot.py compare OUTDIR ROWS.json       OUTDIR/compare.png and .svg
  posenc_plot.py --check                        exit 0 if matplotlib can be imported, else 3
  --isas scalar,sse4,...  (before report/compare) the ISAs in the order lines and legends
                          list them; posenc-report passes posenc's own list

Each panel is one kernel (split by its mode arguments: 0/1 ones such as causal:1, words such
as mask:kvcache, and those only some shapes have, such as window:256): throughput in GB/s
(bytes read + written) against the size of the kernel's buffer, one line per ISA and the naive
loop, with the machine's limit (the limit_rmw, limit_write or limit_copy row the kernel is
compared with, on the same bytes) as a thick grey line and the CPU's caches as dotted verticals. compare
draws, per file, the ISA the dispatcher picked there and that file's limit.

The script draws, it does not read Google Benchmark's rows: posenc-report does (tools/report/
report_rates.cc). A report JSON's "posenc" object holds the CPU, the row groups (kernel,
shape, buffer_bytes, limit row) and "bytes_per_second" per row (the median of its
repetitions); `posenc-report compare` writes ROWS.json, {"reports": [...]}, one such object
per file (with its "path"; groups estimated for a plain posenc_bench file). Row names follow
DESIGN.md: <kernel>/<variant>/<arg>:<value>/..., limit_rmw/bytes:<n>. Rows outside every group
(the rope_decode_layers and rope_cold_layer rows: RoPE time per layer, no limit; limit_fma:
no bytes) are not drawn.
"""

import json
import os
import sys

# The ISAs in posenc's enum order: posenc-report passes them (--isas a,b,...) from the header's
# enum, the one ISA list; a variant not in it sorts after them by name, and "naive" comes last.
ISA_ORDER = []
ISA_COLORS = ["#7f7f7f", "#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
              "#17becf", "#bcbd22"]
NAIVE_COLOR = "#ff7f0e"


def variant_rank(variant):
    if variant == "naive":
        return (2, 0, variant)
    if variant in ISA_ORDER:
        return (0, ISA_ORDER.index(variant), variant)
    return (1, 0, variant)


def variant_color(variant):
    if variant == "naive":
        return NAIVE_COLOR
    if variant in ISA_ORDER:
        return ISA_COLORS[ISA_ORDER.index(variant) % len(ISA_COLORS)]
    return "black"
FILE_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
               "#17becf", "#7f7f7f", "#bcbd22"]
EXIT_NO_MATPLOTLIB = 3


def human_bytes(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            value = n / size
            return ("%.0f %s" if value == int(value) else "%.1f %s") % (value, unit)
    return "%d B" % n


def shape_args(shape):
    args = {}
    for part in shape.split("/"):
        key, _, value = part.partition(":")
        args[key] = value
    return args


class Report:
    """One report as posenc-report wrote it: bytes/s per row (the median of its repetitions),
    row groups, CPU, options."""

    def __init__(self, posenc, path):
        if "bytes_per_second" not in posenc:
            raise SystemExit("posenc_plot: %s: no \"bytes_per_second\" in its \"posenc\" "
                             "object: written by an older posenc-report (`posenc-report compare "
                             "FILE` plots it)" % path)
        self.path = path
        cpu = posenc.get("cpu", {})
        self.cpu = cpu.get("model") or "unknown CPU"
        self.active = cpu.get("isa", {}).get("active") or "?"
        self.caches = cpu.get("caches") or []
        options = posenc.get("options", {})
        self.quick = options.get("quick", False)
        self.runs = ""
        if "repetitions" in options:
            n = options["repetitions"]
            self.runs = "min_time %g s, %d %s" % (
                options.get("min_time", 0), n,
                "interleaved repetitions, medians" if n > 1 else "repetition")
        self.rates = posenc["bytes_per_second"]
        self.groups = posenc.get("groups") or []

    def rate(self, name):
        value = self.rates.get(name)
        return None if value is None else value / 1e9


def read_json(path):
    with open(path) as f:
        return json.load(f)


class Panel:
    """One kernel at one mode: its groups, sorted by buffer size."""

    def __init__(self, kernel, mode, groups):
        self.kernel = kernel
        self.mode = mode
        self.groups = sorted(groups, key=lambda g: g["buffer_bytes"])
        self.limit_kind = self.groups[0]["limit"].split("/")[0]

    @property
    def key(self):
        return (self.kernel, self.mode)

    @property
    def title(self):
        return self.kernel + ("  " + self.mode if self.mode else "")

    def sizes(self):
        return [g["buffer_bytes"] for g in self.groups]

    def tick_labels(self):
        """Buffer size -> "320 KiB\ntokens:16": the size and the arguments that vary."""
        args = [shape_args(g["shape"]) for g in self.groups]
        varying = [k for k in args[0] if len({a.get(k) for a in args}) > 1] if args else []
        labels = {}
        for g, a in zip(self.groups, args):
            shape = "/".join("%s:%s" % (k, a[k]) for k in varying if k in a)
            previous = labels.get(g["buffer_bytes"])
            labels[g["buffer_bytes"]] = shape if previous is None else previous + ",\n" + shape
        return {size: human_bytes(size) + ("\n" + shape if shape else "")
                for size, shape in labels.items()}

    def series(self, report, variant):
        """(bytes, GB/s) of `variant` where the report has it."""
        points = []
        for g in self.groups:
            rate = report.rate("%s/%s/%s" % (self.kernel, variant, g["shape"]))
            if rate is not None:
                points.append((g["buffer_bytes"], rate))
        return points

    def limit_series(self, report):
        points = []
        for g in self.groups:
            rate = report.rate(g["limit"])
            if rate is not None:
                points.append((g["buffer_bytes"], rate))
        return points


def is_mode(values, in_every_group):
    """A mode argument: 0/1 (causal:1), a word (mask:kvcache), or one that only some of the
    kernel's groups have (sinks:1, window:256); the others are sizes, the x axis."""
    words = any(not v.isdigit() for v in values)
    return (len(values) > 1 and values <= {"0", "1"}) or words or not in_every_group


def panels_of(groups):
    """Panels in the groups' order: a kernel's groups split by its mode arguments."""
    by_kernel = {}
    for g in groups:
        by_kernel.setdefault(g["kernel"], []).append(g)
    panels = []
    for kernel, kernel_groups in by_kernel.items():
        values, counts = {}, {}
        for g in kernel_groups:
            for key, value in shape_args(g["shape"]).items():
                values.setdefault(key, set()).add(value)
                counts[key] = counts.get(key, 0) + 1
        modes = [k for k, v in values.items() if is_mode(v, counts[k] == len(kernel_groups))]
        by_mode = {}
        for g in kernel_groups:
            args = shape_args(g["shape"])
            mode = "/".join("%s:%s" % (k, args[k]) for k in modes if k in args)
            by_mode.setdefault(mode, []).append(g)
        panels.extend(Panel(kernel, mode, gs) for mode, gs in by_mode.items())
    return panels


def variants_of(report, panel):
    found = set()
    for name in report.rates:
        parts = name.split("/", 2)
        if len(parts) == 3 and parts[0] == panel.kernel and any(
                parts[2] == g["shape"] for g in panel.groups):
            found.add(parts[1])
    return sorted(found, key=variant_rank)


LIMIT_STYLE = {  # label, colour of the thick translucent line
    "limit_rmw": ("limit_rmw (in-place stream)", "#404040"),
    "limit_write": ("limit_write (store-only stream)", "#8b6914"),
    "limit_copy": ("limit_copy (copy stream, src + dst bytes)", "#2f4f6f"),
}


def limit_style(kind):
    return LIMIT_STYLE.get(kind, (kind, "#404040"))


def setup_axes(ax, panel, sizes, all_rates, caches):
    from matplotlib import ticker
    lo, hi = min(sizes), max(sizes)
    ax.set_xscale("log", base=2)
    ax.set_xlim(lo / 2.5, hi * 2.5)
    labels = panel.tick_labels()
    ax.set_xticks(sorted(set(sizes)))
    ax.xaxis.set_major_formatter(
        ticker.FuncFormatter(lambda x, _: labels.get(int(round(x)), human_bytes(x))))
    ax.xaxis.set_minor_locator(ticker.NullLocator())
    ax.tick_params(axis="x", labelsize=8)
    rates = [r for r in all_rates if r > 0]
    if rates and max(rates) / min(rates) > 8:
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_minor_locator(ticker.NullLocator())
        ax.set_ylim(min(rates) / 1.6, max(rates) * 1.6)
    else:
        ax.set_ylim(0, max(rates + [1]) * 1.15)
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda y, _: "%g" % y))
    ax.grid(True, which="major", alpha=0.3)
    ax.set_title(panel.title, fontsize=11)
    ax.set_xlabel("buffer size")
    ax.set_ylabel("GB/s (read + written)")
    x_lo, x_hi = ax.get_xlim()
    for cache in caches:
        if cache.get("type") == "Instruction":
            continue
        size = cache.get("size", 0)
        if x_lo < size < x_hi:
            ax.axvline(size, color="#999999", linestyle=":", linewidth=1)
            ax.annotate("L%d %s" % (cache.get("level", 0), human_bytes(size)), (size, 1.0),
                        xycoords=("data", "axes fraction"), xytext=(2, -10),
                        textcoords="offset points", fontsize=7, color="#666666")


def draw_report_panel(ax, report, panel, title):
    lines = []
    limit = panel.limit_series(report)
    if limit:
        xs, ys = zip(*limit)
        lines += ys
        label, color = limit_style(panel.limit_kind)
        ax.plot(xs, ys, color=color, alpha=0.35, linewidth=6, solid_capstyle="round",
                marker="s", markersize=7, label=label)
    for variant in variants_of(report, panel):
        points = panel.series(report, variant)
        if not points:
            continue
        xs, ys = zip(*points)
        lines += ys
        active = variant == report.active
        ax.plot(xs, ys, marker="o", markersize=5 if active else 4,
                linewidth=2.4 if active else 1.4, linestyle="--" if variant == "naive" else "-",
                color=variant_color(variant),
                label=variant + (" (active)" if active else ""))
    setup_axes(ax, panel, panel.sizes(), list(lines), report.caches)
    ax.set_title(title, fontsize=11)


def legend_handles(axes):
    """One legend entry per label over several panels, in order of appearance."""
    handles = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    return handles


def save(fig, out_dir, stem):
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(out_dir, stem + "." + ext), dpi=110)


def plot_report(json_path, out_dir):
    import matplotlib.pyplot as plt
    report = Report(read_json(json_path).get("posenc", {}), json_path)
    panels = [p for p in panels_of(report.groups) if variants_of(report, p)]
    if not panels:
        print("posenc_plot: no kernel rows in %s" % json_path, file=sys.stderr)
        return 1
    os.makedirs(out_dir, exist_ok=True)
    subtitle = "%s, active ISA %s%s" % (report.cpu, report.active,
                                        " (%s)" % report.runs if report.runs else "")
    if report.quick:
        subtitle += ", --quick"
    kernels = []
    for p in panels:
        if p.kernel not in kernels:
            kernels.append(p.kernel)
    for kernel in kernels:
        mine = [p for p in panels if p.kernel == kernel]
        fig, axes = plt.subplots(1, len(mine), figsize=(6.5 * len(mine) + 2.2, 5.2),
                                 squeeze=False)
        for ax, panel in zip(axes[0], mine):
            draw_report_panel(ax, report, panel, panel.mode)
        handles = legend_handles(axes[0])
        fig.legend(list(handles.values()), list(handles.keys()), loc="center right",
                   fontsize=9, frameon=False)
        fig.suptitle("%s: throughput against buffer size\n%s" % (kernel, subtitle), fontsize=11)
        fig.tight_layout(rect=(0, 0, 1 - 2.1 / (6.5 * len(mine) + 2.2), 1))
        save(fig, out_dir, kernel)
        plt.close(fig)
    columns = min(4, len(panels))
    rows = (len(panels) + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 4.2 * rows + 1.1),
                             squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        draw_report_panel(ax, report, panel, panel.title)
    handles = legend_handles(axes.flat[:len(panels)])
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    fig.suptitle("posenc: GB/s against buffer size per ISA, with the machine's limit\n" +
                 subtitle, fontsize=12)
    fig.legend(list(handles.values()), list(handles.keys()), loc="lower center",
               ncol=min(8, len(handles)), fontsize=9, frameon=False)
    height = fig.get_size_inches()[1]  # room in inches: title above, legend below
    fig.tight_layout(rect=(0, 0.45 / height, 1, 1 - 0.65 / height))
    save(fig, out_dir, "overview")
    plt.close(fig)
    return 0


def plot_compare(out_dir, rows_path):
    import matplotlib.pyplot as plt
    reports = [Report(r, r.get("path", "?")) for r in read_json(rows_path).get("reports", [])]
    panels, seen = [], set()
    for report in reports:
        for panel in panels_of(report.groups):
            if panel.key not in seen and any(panel.series(r, r.active) for r in reports):
                seen.add(panel.key)
                panels.append(panel)
    if not panels:
        print("posenc_plot: no common kernel rows to plot", file=sys.stderr)
        return 1
    os.makedirs(out_dir, exist_ok=True)
    columns = min(4, len(panels))
    rows = (len(panels) + columns - 1) // columns
    legend_rows = len(reports)  # each file: its ISA and its limit, side by side
    fig, axes = plt.subplots(rows, columns,
                             figsize=(5.2 * columns, 4.2 * rows + 0.9 + 0.25 * legend_rows),
                             squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        rates = []
        for i, report in enumerate(reports):
            color = FILE_COLORS[i % len(FILE_COLORS)]
            label = "[%d] %s, %s: %s" % (i + 1, report.cpu, report.active, report.path)
            points = panel.series(report, report.active)
            if points:
                xs, ys = zip(*points)
                rates += ys
                ax.plot(xs, ys, marker="o", linewidth=2, color=color, label=label)
            limit = panel.limit_series(report)
            if limit:
                xs, ys = zip(*limit)
                rates += ys
                ax.plot(xs, ys, linestyle=":", marker="x", linewidth=1.2, color=color,
                        label="[%d] limit" % (i + 1))
        setup_axes(ax, panel, panel.sizes(), rates, [])
    handles = legend_handles(axes.flat[:len(panels)])
    # Two columns, filled column by column: each file's ISA on the left, its limit on the right.
    labels = sorted(handles, key=lambda label: (label.endswith(" limit"), label))
    handles = {label: handles[label] for label in labels}
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    fig.suptitle("posenc compare: GB/s against buffer size of the ISA each file's dispatcher "
                 "picked (solid), and of that machine's limit on the same bytes (dotted:\n"
                 "limit_rmw, limit_write for table fills, limit_copy out of place)", fontsize=12)
    fig.legend(list(handles.values()), list(handles.keys()), loc="lower center", ncol=2,
               fontsize=9, frameon=False)
    legend_inches = 0.25 * legend_rows + 0.2
    height = fig.get_size_inches()[1]
    fig.tight_layout(rect=(0, legend_inches / height, 1, 1 - 0.7 / height))
    save(fig, out_dir, "compare")
    plt.close(fig)
    return 0


def main(argv):
    try:
        import matplotlib
    except ImportError:
        print("posenc_plot: matplotlib is not installed for %s" % sys.executable,
              file=sys.stderr)
        return EXIT_NO_MATPLOTLIB
    if argv[:1] == ["--check"]:
        return 0
    matplotlib.use("Agg")
    if len(argv) >= 2 and argv[0] == "--isas":
        ISA_ORDER[:] = argv[1].split(",")
        argv = argv[2:]
    if len(argv) == 3 and argv[0] == "report":
        return plot_report(argv[1], argv[2])
    if len(argv) == 3 and argv[0] == "compare":
        return plot_compare(argv[1], argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
