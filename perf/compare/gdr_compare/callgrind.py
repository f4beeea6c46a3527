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


# Where an object's instructions count (UCX core / transport / verbs provider / libc)
OBJECT_CLASSES = (
    ("transport", re.compile(r"libuct_(ib|gdr)[^/]*$")),
    ("ucx_core", re.compile(r"lib(ucs|uct|ucp|ucm)[^/]*$")),
    ("provider", re.compile(r"lib(ibverbs|rxe)[^/]*$|librxe-rdmav\d+\.so$")),
    ("libc", re.compile(r"libc[.-][^/]*$")),
    # the MPI rows: Open MPI (libmpi, its support libraries and components), MPICH
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


# valgrind 3.19's callgrind keeps the function options (--toggle-collect, --dump-before, ...) in
# a prefix tree of their patterns (callgrind/clo.c, get_fnc2 and update_fn_config2), with two
# flaws that decide which options a function really gets when several share a prefix: adding a
# pattern whose path ends at an existing node's children never looks among those children
# (it prepends a new child, so a second option on the same name makes a second leaf that hides
# the first), and the lookup follows only the first child in a bucket whose name is a prefix of
# the rest.  Given --toggle-collect and --dump-before for both uct_tcp_ep_am_short and
# uct_tcp_ep_am_bcopy, callgrind collected nothing in am_bcopy (host, 2026-12-05).  The code
# below follows clo.c line for line so that a command line can be checked before it is run.
NODE_DEGREE = 30  # clo.c


class _Node:
    def __init__(self, name):
        self.name, self.config, self.next = name, None, None
        self.sub, self.wild_char, self.wild_star = [None] * NODE_DEGREE, None, None


def _is_wild(c):
    return c in "*?"


def _get_fnc2(node, name):
    """clo.c get_fnc2: the leaf (a dict of options) of pattern `name` below `node`."""
    if not name:
        if node.config is None:
            node.config = {}
        return node.config
    if _is_wild(name[0]):
        if name[0] == "*":
            while name[1:2] == "*":
                name = name[1:]
            sub = node.wild_star
        else:
            sub = node.wild_char
        if sub is None:
            sub = _Node(name[0])
            if name[0] == "*":
                node.wild_star = sub
            else:
                node.wild_char = sub
        return _get_fnc2(sub, name[1:])
    h = ord(name[0]) % NODE_DEGREE
    n, prev, length = node.sub[h], None, 0
    while n:
        length = 0
        while length < len(name) and length < len(n.name) and name[length] == n.name[length]:
            length += 1
        if length > 0:
            break
        prev, n = n, n.next
    if n is None:
        length = 1
        while length < len(name) and not _is_wild(name[length]):
            length += 1
        sub = _Node(name[:length])
        sub.next, node.sub[h] = node.sub[h], sub
        if length == len(name):
            sub.config = {}
            return sub.config
        return _get_fnc2(sub, name[length:])
    if length < len(n.name):  # split n: its first `length` characters become a node of their own
        split = _Node(n.name[:length])
        if prev:
            prev.next = split
        else:
            node.sub[ord(n.name[0]) % NODE_DEGREE] = split
        split.next = n.next
        split.sub[ord(n.name[length]) % NODE_DEGREE] = n
        n.name = n.name[length:]
        name = name[length:]
        offset = 0
        while offset < len(name) and not _is_wild(name[offset]):
            offset += 1
        sub = _Node(name[:offset])
        h2 = ord(name[0]) % NODE_DEGREE if name else 0
        sub.next, split.sub[h2] = split.sub[h2], sub
        if offset == len(name):
            sub.config = {}
            return sub.config
        return _get_fnc2(sub, name[offset:])
    name = name[len(n.name):]
    if not name:
        if n.config is None:
            n.config = {}
        return n.config
    offset = 1
    while offset < len(name) and not _is_wild(name[offset]):
        offset += 1
    sub = _Node(name[:offset])
    h2 = ord(name[0]) % NODE_DEGREE
    sub.next, n.sub[h2] = n.sub[h2], sub
    return _get_fnc2(sub, name[offset:])


def _update(options, node, name):
    """clo.c update_fn_config2: every option of the leaves that `name` reaches, into options."""
    if not name and node.config is not None:
        options.update(node.config)
        return
    n = node.sub[ord(name[0]) % NODE_DEGREE] if name else node.sub[0]
    while n:
        if name.startswith(n.name):  # strncmp(name, n->name, n->length) == 0
            break
        n = n.next
    if n:
        _update(options, n, name[len(n.name):])
    if node.wild_char and name:
        _update(options, node.wild_char, name[1:])
    if node.wild_star:
        for i in range(len(name) + 1):
            _update(options, node.wild_star, name[i:])


def function_options(argv, function):
    """The function options (--toggle-collect=P, --dump-before=P, ...) of a callgrind command
    line that callgrind 3.19 applies to `function` -> {option: True}."""
    root = None
    for arg in argv:
        m = re.match(r"--(toggle-collect|dump-before|dump-after|zero-before)=(.*)$", arg)
        if m:
            if root is None:
                root = _Node("")  # clo.c: new_config(name, 0)
            _get_fnc2(root, m.group(2))[m.group(1)] = True
    options = {}
    if root is not None:
        _update(options, root, function)
    return options
