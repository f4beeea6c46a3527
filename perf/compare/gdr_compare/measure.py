"""Results of a run: one row per measurement, and one ratio per pair of rows that a section
compares.  Every measurement goes through Results.interleave: the launches of a comparison run
in alternation, --pairs times (interleave.py says why); a row is the median of its good runs, a
ratio the median of the per-pair ratios with min-max, and a failed run is never averaged in: it
is named in the row's reason."""

import collections
import statistics

from .interleave import LoadProbe, load_range, per_pair_ratios, ratio_stats, ratio_text
from .plan import SECTION_TOOL
from .units import UNIT, size_label

ROW_KEY = ("section", "test", "size", "metric", "transport", "tool", "ranks")


def row_key(spec):
    """The fields that name a row (a spec for record(), or a recorded row), defaults filled in
    as record() fills them: what a ratio stores to name its two rows."""
    key = {k: spec.get(k) for k in ROW_KEY}
    key["tool"] = key["tool"] or SECTION_TOOL.get(key["section"])
    key["ranks"] = key["ranks"] or 2
    return key


class Launch(collections.namedtuple("Launch", "name specs once")):
    """One program launch of a comparison: `specs` are the rows it yields (record()'s keys);
    once(log_name) -> (results, wall) with results[i] = (value, reason) for specs[i]."""


def single(spec, name, once):
    """A launch that yields one row, from once(log_name) -> (value, reason, wall)."""
    def run(log_name):
        value, reason, wall = once(log_name)
        return [(value, reason)], wall
    return Launch(name, [spec], run)


class Results:
    def __init__(self, pairs, load=None):
        """pairs: how often each comparison runs (A B A B ...); load: () -> the host's 1-minute
        load average (interleave.LoadProbe)."""
        self.pairs = max(1, pairs)
        self.load = load or LoadProbe()
        self.rows = []
        self.ratios = []

    def record(self, section, test, size, metric, transport, value, reason, wall, name,
               samples=(), tool=None, ranks=2, loads=None, show=True):
        """One row into the results, and its line on the terminal unless show is false."""
        tool = tool or SECTION_TOOL.get(section)
        row = dict(section=section, test=test, size=size, metric=metric, transport=transport,
                   value=value, status="ok" if value is not None else "n/a", reason=reason,
                   samples=list(samples), wall_s=round(wall, 2),
                   log=f"logs/{name}" if name else None, tool=tool, ranks=ranks,
                   loads=loads or [])
        self.rows.append(row)
        if not show:
            return
        shown = f"{value:.4g} {UNIT[metric]}" if value is not None else f"n/a ({reason})"
        spread = f"  [{', '.join(f'{v:.4g}' for v in samples)}]" if len(samples) > 1 else ""
        if section in SECTION_TOOL:
            print(f"  {section:3} {transport:8} {test:12} {size_label(size):>7}  {shown}{spread}",
                  flush=True)
        else:
            where = f"{transport} x{ranks}" if section == "coll" else transport
            print(f"  {section:7} {where:11} {tool:12} {test:14} {size_label(size):>7}  "
                  f"{shown}{spread}", flush=True)

    def summary(self, samples, reasons):
        """The median of the good runs; a failed one is never averaged in, it is named."""
        value = statistics.median(samples) if samples else None
        reason = None
        if reasons:
            reason = reasons[0] if not samples else \
                f"{len(reasons)} of {self.pairs} runs failed: {reasons[0]}"
        return value, reason

    def log_name(self, name, i):
        return name if self.pairs == 1 else f"{name}-r{i + 1}"

    def has(self, **key):
        """True when a row with these fields was recorded already."""
        return any(all(r.get(k) == v for k, v in key.items()) for r in self.rows)

    def interleave(self, launches, ratios=()):
        """Runs the launches one after the other, --pairs times (A B A B ..., each pair between
        two readings of the host's load) and records a row per spec: the median of its good
        runs.  ratios: [(label, numerator spec, denominator spec)], each recorded as the median
        of the per-pair ratios with min-max and the noisy verdict (interleave.ratio_stats)."""
        values = [[[None] * self.pairs for _ in launch.specs] for launch in launches]
        reasons = [[[] for _ in launch.specs] for launch in launches]
        walls = [0.0] * len(launches)
        loads = []
        for i in range(self.pairs):
            start = self.load()
            for k, launch in enumerate(launches):
                results, wall = launch.once(self.log_name(launch.name, i))
                walls[k] += wall
                for j, (value, reason) in enumerate(results):
                    if value is None:
                        reasons[k][j].append(reason)
                    else:
                        values[k][j][i] = value
            loads.append([start, self.load()])
        by_key = {}
        for k, launch in enumerate(launches):
            for j, spec in enumerate(launch.specs):
                good = [v for v in values[k][j] if v is not None]
                value, reason = self.summary(good, reasons[k][j])
                self.record(value=value, reason=reason, wall=walls[k], name=launch.name,
                            samples=good, loads=loads, **spec)
                by_key[tuple(row_key(spec).values())] = values[k][j]
        for label, num, den in ratios:
            per_pair = per_pair_ratios(by_key[tuple(row_key(num).values())],
                                       by_key[tuple(row_key(den).values())])
            stats = ratio_stats(per_pair)
            self.ratios.append(dict(label=label, of=row_key(num), to=row_key(den),
                                    ratios=per_pair, loads=loads, **(stats or {})))
            lo_hi = load_range(loads)
            load = f", load {lo_hi[0]:.1f}-{lo_hi[1]:.1f}" if lo_hi else ""
            print(f"    {label} {num['test']} {size_label(num['size'])}: {ratio_text(stats)} "
                  f"({len(per_pair)} of {self.pairs} pairs{load})", flush=True)

    def measure(self, section, test, size, metric, transport, name, once, tool=None, ranks=2):
        """One row alone, from once(log_name) -> (value, reason, wall), run --pairs times."""
        spec = dict(section=section, test=test, size=size, metric=metric, transport=transport,
                    tool=tool, ranks=ranks)
        self.interleave([single(spec, name, once)])

    def measure_set(self, specs, name, once):
        """One launch alone that yields several rows (Launch's once), run --pairs times."""
        self.interleave([Launch(name, specs, once)])

    def unmeasured(self, specs, reason):
        """Rows that could not be measured at all (a tool or the plugin is missing)."""
        for spec in specs:
            self.record(value=None, reason=reason, wall=0, name=None, **spec)
