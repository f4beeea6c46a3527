"""Reading a callgrind output file (valgrind --tool=callgrind --dump-instr=no --collect-jumps=no)
into what the cost section needs: instructions by object and call counts by function, all inside
the windows that --toggle-collect opened (only those are recorded).

The format (valgrind's docs, "Callgrind Format Specification"): `ob=`/`fn=` name the object and
function whose self cost the following "position cost" lines are; `cob=`/`cfn=` + `calls=N pos`
+ one cost line describe a call, and that cost line is the callee's inclusive cost, which must not
be added to the caller's self cost.  Names are compressed: `(id) name` defines an id, `(id)`
reuses it."""

import collections
import re

COMPRESSED = re.compile(r"\((\d+)\)(?: (.*))?$")


class Profile:
    def __init__(self):
        self.self_by_object = collections.Counter()  # object path -> Ir, self cost only
        self.self_by_function = collections.Counter()  # (object, function) -> Ir
        self.calls = collections.Counter()  # (callee object, callee function) -> calls
        # (caller object, callee object, callee function) -> [calls, inclusive Ir]
        self.edges = collections.defaultdict(lambda: [0, 0])

    @property
    def total(self):
        return sum(self.self_by_object.values())

    def calls_of(self, function_pattern, object_pattern=""):
        """Calls of the functions whose name matches (re.fullmatch) in matching objects."""
        fn, ob = re.compile(function_pattern), re.compile(object_pattern + ".*")
        return sum(n for (o, f), n in self.calls.items() if fn.fullmatch(f) and ob.fullmatch(o))


def _name(table, value):
    """Resolves a compressed name: '(3) foo' defines id 3, '(3)' reuses it."""
    m = COMPRESSED.match(value.strip())
    if not m:
        return value.strip()
    key, name = m.groups()
    if name is not None:
        table[key] = name
    return table.get(key, f"({key})")


def parse(text):
    p = Profile()
    objects, functions = {}, {}
    ob = fn = cob = cfn = None
    call_pending = False  # the next cost line is a call's inclusive cost
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        key, eq, value = line.partition("=")
        if eq and key in ("ob", "fn", "cob", "cfn", "calls", "fl", "fi", "fe", "cfi", "cfl"):
            if key == "ob":
                ob = _name(objects, value)
            elif key == "fn":
                fn = _name(functions, value)
                cob = None
            elif key == "cob":
                cob = _name(objects, value)
            elif key == "cfn":
                cfn = _name(functions, value)
            elif key == "calls":
                n = int(value.split()[0])
                p.calls[(cob or ob, cfn)] += n
                call_pending = (ob, cob or ob, cfn)
                p.edges[call_pending][0] += n
            continue
        if not (line[0].isdigit() or line[0] in "+-*"):
            continue  # headers: version, cmd, events, summary, totals...
        if call_pending:
            fields = line.split()
            if len(fields) >= 2:
                p.edges[call_pending][1] += int(fields[1])
            call_pending = False
            cob = None
            continue
        fields = line.split()
        if len(fields) >= 2 and fn is not None:
            ir = int(fields[1])
            p.self_by_object[ob] += ir
            p.self_by_function[(ob, fn)] += ir
    return p


# Where an object's instructions count (issue 14: UCX core / transport / verbs provider / libc)
OBJECT_CLASSES = (
    ("transport", re.compile(r"libuct_(ib|gdr)[^/]*$")),
    ("ucx_core", re.compile(r"lib(ucs|uct|ucp|ucm)[^/]*$")),
    ("provider", re.compile(r"lib(ibverbs|rxe)[^/]*$|librxe-rdmav\d+\.so$")),
    ("libc", re.compile(r"libc[.-][^/]*$")),
    # issue 27's MPI rows: Open MPI (libmpi, its support libraries and components), MPICH
    ("mpi", re.compile(r"lib(mpi|open-pal|open-rte|mpich|mca_)[^/]*$|/mca_[^/]*\.so$")),
)


def object_class(path):
    for name, pattern in OBJECT_CLASSES:
        if pattern.search(path or ""):
            return name
    return "other"


def split_by_class(profile):
    split = collections.Counter()
    for ob, ir in profile.self_by_object.items():
        split[object_class(ob)] += ir
    return split
