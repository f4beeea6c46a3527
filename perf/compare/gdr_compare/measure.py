"""Results of a run: one row per measurement, the median of --repeat repetitions, and a progress
line per row.  A failed repetition is never averaged in; it is named in the row's reason."""

import statistics

from .plan import SECTION_TOOL
from .units import UNIT, size_label


class Results:
    def __init__(self, repeat):
        self.repeat = max(1, repeat)
        self.rows = []

    def record(self, section, test, size, metric, transport, value, reason, wall, name,
               samples=(), tool=None, ranks=2):
        tool = tool or SECTION_TOOL.get(section)
        row = dict(section=section, test=test, size=size, metric=metric, transport=transport,
                   value=value, status="ok" if value is not None else "n/a", reason=reason,
                   samples=list(samples), wall_s=round(wall, 2),
                   log=f"logs/{name}" if name else None, tool=tool, ranks=ranks)
        self.rows.append(row)
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
        """The median of the good repetitions; a failed one is never averaged in, it is named."""
        value = statistics.median(samples) if samples else None
        reason = None
        if reasons:
            reason = reasons[0] if not samples else \
                f"{len(reasons)} of {self.repeat} repetitions failed: {reasons[0]}"
        return value, reason

    def log_name(self, name, i):
        return name if self.repeat == 1 else f"{name}-r{i + 1}"

    def measure(self, section, test, size, metric, transport, name, once, tool=None, ranks=2):
        """Runs once(log_name) -> (value, reason, wall) --repeat times and records the median."""
        samples, reasons, wall = [], [], 0.0
        for i in range(self.repeat):
            value, reason, w = once(self.log_name(name, i))
            wall += w
            if value is None:
                reasons.append(reason)
            else:
                samples.append(value)
        value, reason = self.summary(samples, reasons)
        self.record(section, test, size, metric, transport, value, reason, wall, name, samples,
                    tool=tool, ranks=ranks)

    def measure_set(self, specs, name, once):
        """One launch that yields several rows (every size and metric of a collective run).
        specs: [row key dicts for record()]; once(log_name) -> (results, wall) with results[i] =
        (value, reason) for specs[i].  --repeat launches it again; each row gets its median, as
        measure()."""
        samples = [[] for _ in specs]
        reasons = [[] for _ in specs]
        wall = 0.0
        for i in range(self.repeat):
            results, w = once(self.log_name(name, i))
            wall += w
            for k, (value, reason) in enumerate(results):
                if value is None:
                    reasons[k].append(reason)
                else:
                    samples[k].append(value)
        for k, spec in enumerate(specs):
            value, reason = self.summary(samples[k], reasons[k])
            self.record(value=value, reason=reason, wall=wall, name=name, samples=samples[k],
                        **spec)

    def unmeasured(self, specs, reason):
        """Rows that could not be measured at all (a tool or the plugin is missing)."""
        for spec in specs:
            self.record(value=None, reason=reason, wall=0, name=None, **spec)
