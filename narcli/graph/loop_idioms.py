"""A Python loop over the data is one step that repeats, not hundreds of operations.

Run-time tracing unrolls every Python loop. A loop over layers or over a recurrent cell has rules of
its own (each layer is a scope of its own; a cell called per step folds into one recurrence node),
but a loop of parameter-free arithmetic stays unrolled: PointNet++'s farthest-point sampling (512
steps of subtract, square, sum, compare, gather) or Mamba's sequential selective scan (a multiply
and an add per token). Such a loop then makes 90-99 % of the graph, and the search compares the
sampling code instead of the network around it. The loop's length is the data's (points sampled,
tokens), not the architecture's, so the canonical graph keeps one step of it.

A step's copies are found as classes of parameter-free nodes of one scope that agree on operation,
shape, attributes and their neighbours' classes (two rounds of refinement); a class with at least
`MIN_COPIES` members is one node of the loop. So is a class of `MIN_CHAIN` or more in a scope where
some such class reads itself copy after copy (`_chained`; the scan's other parts, such as each
step's output, go with it): a recurrence such as a scan over 32 tokens,
which would otherwise fold at 128 tokens and stay unrolled at 32, so that one model traced at two
lengths were two architectures. Copies side by side (a tensor split into heads, a hand-written sum
of four embeddings) do not read one another and need `MIN_COPIES`. The first and last steps differ
from the others by their neighbours and stay, which keeps where the loop starts and ends. A scope
whose parametrised layers also run as many times (`MIN_COPIES`, or `MIN_CHAIN` for a recurrence) is
a decoder unrolled step by step (a GRU cell and its attention at every output token): its
parameter-free parts are left with the layers they serve, unless the loop runs once per position
of an input's axis (`_stepped_classes`): then the whole step, layers and all, keeps one copy, since
its count is the data's length (a decoder teacher-forced on 12 tokens and on 40 is one design).

The folded node keeps the whole loop's MACs and counts its copies in `attrs["repeats"]`;
`expand_loops` gives the copies back (for the latency head: every step costs a call). The content
hash reads neither, so a loop over 512 points and one over 128 are one architecture.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import replace

from narcli.graph.arch_graph import ArchGraph, Node, refine_labels

MIN_COPIES = 32  # steps a loop needs before it folds: far above any block repeated by hand
# steps a recurrence needs (each copy reads the one before): in the bundled zoo, chained classes of
# 4-6 copies include sequences written out by hand or layer by layer (LayoutLM's four position
# embeddings added one after another; PP-DocLayout's box update between its six decoder layers), and
# every one of 8 or more is a Python loop of its own (DeepSeek-V4's and GLM-5-Next's ~20 normalising
# iterations, XCodec's residual quantiser over eight codebooks)
MIN_CHAIN = 8
REFINE_ROUNDS = 2
REPEATS = "repeats"  # a folded node's attribute: the copies it stands for
# a folded node's attribute: the folded steps it reads, each with the lag between the copies (copy x
# of the one read feeds copy x + lag of this one; a cell reading its own state has itself at lag 1).
# Neither the hash nor the encoder reads it; `expand_loops` gives every step back its inputs from it.
LOOP_READS = "loop_reads"
LOOP_ID = "loop_id"  # a folded node's number among the graph's folded nodes, in node order (for LOOP_READS)
JOINS = frozenset({"concat", "stack"})  # a reader of a loop's steps that reads every one of them


def _loop_classes(graph: ArchGraph) -> list[list[int]]:
    """The classes of parameter-free nodes that are copies of one loop step, each in node order."""
    nodes = graph.nodes
    parents, children = graph.parents(), graph.children()
    free = [n.params == 0 and n.op not in ("input", "output") and REPEATS not in n.attrs for n in nodes]
    # any other node is its own class: a label no other node has stays one through refinement
    labels = [f"{n.op}|{n.shape}|{sorted(n.attrs.items())!r}|{n.scope}" if free[i] else f"#{i}"
              for i, n in enumerate(nodes)]
    for _ in range(REFINE_ROUNDS):
        labels = refine_labels(labels, parents, children)
    # how often a scope's most repeated parametrised layer runs: as often as a loop, it is a decoder
    # unrolled step by step
    layer_runs: Counter[str] = Counter()
    for (scope, _), count in Counter((n.scope, n.label()) for n in nodes if n.params).items():
        layer_runs[scope] = max(layer_runs[scope], count)
    classes: dict[str, list[int]] = defaultdict(list)
    for i, node in enumerate(nodes):
        if free[i] and layer_runs[node.scope] < MIN_COPIES:
            classes[labels[i]].append(i)
    # a scope where one class of copies reads itself step after step runs a recurrence: its other
    # classes of as many copies are that loop's too (a scan's outputs, read by no later step)
    short = [m for m in classes.values() if MIN_CHAIN <= len(m) < MIN_COPIES and layer_runs[nodes[m[0]].scope] < MIN_CHAIN]
    recurrent = {nodes[m[0]].scope for m in short if _chained(m, children)}
    return [members for members in classes.values() if len(members) >= MIN_COPIES] + \
        [members for members in short if nodes[members[0]].scope in recurrent]


def _stepped_classes(graph: ArchGraph) -> list[list[int]]:
    """The classes of a loop whose steps call layers, when it runs once per position of an input's
    axis: a decoder's attention, cell and output layer at every token of the sequence it reads.
    Such a loop's length is the data's, as a scan's is, so one step of it is the architecture. A
    loop of shared layers that runs as often as its configuration says (ALBERT's one layer twelve
    times) is the design's and stays: its count is no input's length (a model traced with as many
    tokens as it has layers is the exception this rule gets wrong)."""
    nodes = graph.nodes
    lengths = {d for n in nodes if n.op == "input" for d in (n.shape or ()) if isinstance(d, int) and d >= MIN_CHAIN}
    if not lengths:
        return []
    parents, children = graph.parents(), graph.children()
    labels = [f"{n.op}|{n.shape}|{sorted(n.attrs.items())!r}|{n.scope}"
              if n.op not in ("input", "output") and REPEATS not in n.attrs else f"#{i}" for i, n in enumerate(nodes)]
    for _ in range(REFINE_ROUNDS):
        labels = refine_labels(labels, parents, children)
    classes: dict[str, list[int]] = defaultdict(list)
    for i, label in enumerate(labels):
        classes[label].append(i)
    out: list[list[int]] = []
    for length in sorted(lengths):
        # the first and last steps differ from the others by their neighbours, and so, through the
        # rounds of refinement, do one or two more at each end: a class holds the steps between
        fewest = max(MIN_CHAIN // 2, length - 2 * (REFINE_ROUNDS + 1))
        loop = [m for m in classes.values() if fewest <= len(m) <= length]
        if any(nodes[m[0]].params and _chained(m, children) for m in loop):
            out += [m for m in loop if not any(set(m) & set(taken) for taken in out)]
    return out


def _chained(members: list[int], children: list[list[int]]) -> bool:
    """Whether each copy (in node order, which is topological) reads the one before it, directly or
    through other nodes: the steps of a recurrence, not copies side by side."""
    for before, after in zip(members, members[1:]):
        stack, seen = [before], {before}
        while stack:
            node = stack.pop()
            if after in children[node]:
                break
            for child in children[node]:
                if child < after and child not in seen:  # nothing past `after` can lead back to it
                    seen.add(child)
                    stack.append(child)
        else:
            return False
    return True


def fold_loops(graph: ArchGraph) -> ArchGraph:
    """`graph` with each loop over the data kept as one step (the same object if there is none): a
    parameter-free loop or recurrence, or a loop of layers once per position of an input's axis."""
    stepped = _stepped_classes(graph)
    taken = {i for members in stepped for i in members}
    classes = stepped + [m for m in _loop_classes(graph) if not taken & set(m)]
    if not classes:
        return graph
    stands_for = {i: members[0] for members in classes for i in members}
    heads = {members[0]: members for members in classes}
    keep = [i for i in range(len(graph.nodes)) if stands_for.get(i, i) == i]
    index = {old: new for new, old in enumerate(keep)}
    nodes = []
    for i in keep:
        node = graph.nodes[i]
        if i in heads:
            members = heads[i]
            node = replace(node, attrs={**node.attrs, REPEATS: len(members)},
                           macs=sum(graph.nodes[j].macs for j in members))
        nodes.append(node)
    edges = set()
    for s, d in graph.edges:
        a, b = index[stands_for.get(s, s)], index[stands_for.get(d, d)]
        if a != b:  # a step reading the one before it is the loop itself, not an edge
            edges.add((a, b))
    folded = ArchGraph(nodes, sorted(_cut_cycles(nodes, edges)), dict(graph.meta)).canonicalize()
    node_of = {head: id(nodes[index[head]]) for head in heads}  # canonicalize keeps the node objects
    lags = {node_of[reader]: {node_of[read]: lag for read, lag in reads.items()}
            for reader, reads in _step_lags(graph, classes).items()}
    return _number_steps(folded, lags)


def _step_lags(graph: ArchGraph, classes: list[list[int]]) -> dict[int, dict[int, int]]:
    """For each class (by its first member), the classes it reads (by theirs) and at what lag: copy x
    of the one read feeds copy x + lag (the most common offset of their edges; a class holds a run
    of steps)."""
    where = {j: (members[0], x) for members in classes for x, j in enumerate(members)}
    offsets: dict[tuple[int, int], Counter[int]] = defaultdict(Counter)
    for s, d in graph.edges:
        if s in where and d in where:
            (read, x), (reader, y) = where[s], where[d]
            offsets[(read, reader)][y - x] += 1
    out: dict[int, dict[int, int]] = defaultdict(dict)
    for (read, reader), counts in sorted(offsets.items()):
        out[reader][read] = counts.most_common(1)[0][0]
    return out


def _number_steps(graph: ArchGraph, lags: dict[int, dict[int, int]]) -> ArchGraph:
    """`graph` with its folded nodes numbered in node order (LOOP_ID) and each one's LOOP_READS by
    those numbers: this fold's (`lags`, by the `id` of the node objects reading and read) and an
    earlier fold's, renumbered."""
    old_ids = {n.attrs[LOOP_ID]: id(n) for n in graph.nodes if LOOP_ID in n.attrs}
    number = {id(n): k for k, n in enumerate(n for n in graph.nodes if REPEATS in n.attrs)}
    nodes = []
    for node in graph.nodes:
        if REPEATS in node.attrs:
            attrs = {k: v for k, v in node.attrs.items() if k != LOOP_READS}
            attrs[LOOP_ID] = number[id(node)]
            reads = {number[old_ids[int(k)]]: lag for k, lag in node.attrs.get(LOOP_READS, {}).items()
                     if int(k) in old_ids and old_ids[int(k)] in number}
            reads |= {number[read]: lag for read, lag in lags.get(id(node), {}).items() if read in number}
            if reads:
                attrs[LOOP_READS] = {str(k): reads[k] for k in sorted(reads)}
            node = replace(node, attrs=attrs)
        nodes.append(node)
    return ArchGraph(nodes, list(graph.edges), dict(graph.meta))


def _cut_cycles(nodes: list[Node], edges: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """The folded steps' edges without cycles. A recurrence folded to one step reads itself: the
    multiply that reads the state feeds the add that writes it, which feeds the next step's multiply.
    Where to cut that cycle must not depend on the traced order, in which a step's independent
    operations fall as the sequence's length has them (a scan at 24 and at 96 tokens would be two
    graphs). Inside each cycle (a strongly connected set of nodes) a step starts where the cycle is
    read from outside it (the step's inputs, the loop's first step): edges are kept from the node
    nearer those entries to the one farther, ties broken by a label read from the folded graph
    itself (operation, attributes and module, then three rounds of its neighbours' labels, edges
    either way). Both are the same at any length. Edges between cycles keep their direction."""
    component = _components(len(nodes), edges)
    if len(set(component)) == len(nodes):
        return edges
    adjacent: list[list[int]] = [[] for _ in nodes]
    inside: list[list[int]] = [[] for _ in nodes]
    entries = set()
    for a, b in edges:
        adjacent[a].append(b)
        adjacent[b].append(a)
        if component[a] == component[b]:
            inside[a].append(b)
        else:
            entries.add(b)
    labels = [f"{n.op}|{sorted((k, v) for k, v in n.attrs.items() if k not in (REPEATS, LOOP_ID, LOOP_READS))!r}"
              f"|{n.scope}|{n.params > 0}"
              for n in nodes]
    for _ in range(3):
        labels = refine_labels(labels, adjacent, adjacent)
    distance = dict.fromkeys(entries, 0)  # breadth-first from the entries, along the cycles' own edges
    frontier = sorted(entries)
    while frontier:
        reached = []
        for node in frontier:
            for child in inside[node]:
                if child not in distance:
                    distance[child] = distance[node] + 1
                    reached.append(child)
        frontier = reached
    key = [(distance.get(i, 0), labels[i]) for i in range(len(nodes))]
    return {(a, b) for a, b in edges if component[a] != component[b] or key[a] < key[b]}


def _components(count: int, edges: set[tuple[int, int]]) -> list[int]:
    """Each node's strongly connected component (Kosaraju's two passes, without recursion)."""
    forward: list[list[int]] = [[] for _ in range(count)]
    backward: list[list[int]] = [[] for _ in range(count)]
    for a, b in edges:
        forward[a].append(b)
        backward[b].append(a)
    finished, seen = [], [False] * count
    for start in range(count):
        if seen[start]:
            continue
        seen[start] = True
        stack = [(start, iter(forward[start]))]
        while stack:
            node, children = stack[-1]
            for child in children:
                if not seen[child]:
                    seen[child] = True
                    stack.append((child, iter(forward[child])))
                    break
            else:
                stack.pop()
                finished.append(node)
    component = [-1] * count
    for root in reversed(finished):
        if component[root] >= 0:
            continue
        component[root] = root
        stack = [root]
        while stack:
            for parent in backward[stack.pop()]:
                if component[parent] < 0:
                    component[parent] = root
                    stack.append(parent)
    return component


def expand_loops(graph: ArchGraph) -> ArchGraph:
    """`graph` with each folded loop step back as its copies, each reading and feeding what the
    step does, the MACs shared out (what forward runs, for costing it); `graph` itself if none."""
    if not any(REPEATS in n.attrs for n in graph.nodes):
        return graph
    nodes: list[Node] = []
    copies: dict[int, list[int]] = {}
    for i, node in enumerate(graph.nodes):
        count = int(node.attrs.get(REPEATS, 1))
        if count <= 1:
            copies[i] = [len(nodes)]
            nodes.append(node)
            continue
        attrs = {k: v for k, v in node.attrs.items() if k not in (REPEATS, LOOP_READS, LOOP_ID)}
        share, left = divmod(node.macs, count)
        copies[i] = list(range(len(nodes), len(nodes) + count))
        nodes += [replace(node, attrs=attrs, macs=share + (left if k == 0 else 0)) for k in range(count)]
    if not any(LOOP_READS in n.attrs for n in graph.nodes):
        return _expand_without_lags(graph, nodes, copies)
    # between folded steps, the edges the fold recorded, copy by copy (those the cycle's cut
    # dropped too); the rest as `_spread` guesses them
    folded = {int(n.attrs[LOOP_ID]): i for i, n in enumerate(graph.nodes) if LOOP_ID in n.attrs and len(copies[i]) > 1}
    exact, known = set(), set()
    for i, node in enumerate(graph.nodes):
        for key, lag in node.attrs.get(LOOP_READS, {}).items():
            if int(key) in folded:
                j = folded[int(key)]
                known.add((j, i))
                exact.update((a, copies[i][x + lag]) for x, a in enumerate(copies[j]) if 0 <= x + lag < len(copies[i]))
    stepped = {(n.scope, n.op) for i, n in enumerate(graph.nodes) if len(copies[i]) > 1}
    before = [len(copies[i]) == 1 and (n.scope, n.op) in stepped for i, n in enumerate(graph.nodes)]
    guessed = _spread([e for e in graph.edges if e not in known], copies,
                      [n.op in JOINS for n in graph.nodes], before) - exact
    kept = _acyclic(len(nodes), exact, guessed)
    if kept is None:  # recorded steps that contradict one another (a hand-edited graph): guess them all
        return _expand_without_lags(graph, nodes, copies)
    return ArchGraph(nodes, sorted(exact | kept), dict(graph.meta)).canonicalize()


def _acyclic(count: int, trusted: set[tuple[int, int]], guessed: set[tuple[int, int]]) -> set[tuple[int, int]] | None:
    """`guessed` less the edges that close a cycle with the others and `trusted`: sorted
    topologically, whichever guessed edges leave nodes unsorted are dropped, and again. None when
    `trusted` closes a cycle by itself."""
    guessed = set(guessed)
    while True:
        edges = trusted | guessed
        waiting = [0] * count
        children: list[list[int]] = [[] for _ in range(count)]
        for a, b in edges:
            waiting[b] += 1
            children[a].append(b)
        ready = [i for i in range(count) if waiting[i] == 0]
        done = set(ready)
        while ready:
            node = ready.pop()
            for child in children[node]:
                waiting[child] -= 1
                if waiting[child] == 0:
                    done.add(child)
                    ready.append(child)
        if len(done) == count:
            return guessed
        left = {(a, b) for a, b in guessed if a in done or b in done}
        if left == guessed:  # the cycle is the trusted edges' own: nothing guessed to drop
            return None
        guessed = left


def _expand_without_lags(graph: ArchGraph, nodes: list[Node], copies: dict[int, list[int]]) -> ArchGraph:
    """The expansion of a graph folded before the fold recorded its steps' lags (IR 11-12): step k
    feeds step k; a loop's steps run one after another in node order."""
    joins = [node.op in JOINS for node in graph.nodes]
    edges = _spread(graph.edges, copies, joins)
    # a loop runs its steps one after another: step k's last operation feeds step k + 1's first
    loops: dict[tuple[str, int], list[int]] = defaultdict(list)
    for i, node in enumerate(graph.nodes):
        if len(copies[i]) > 1:
            loops[(node.scope, len(copies[i]))].append(i)
    for members in loops.values():
        first, last = copies[members[0]], copies[members[-1]]
        edges.update(zip(last[:-1], first[1:]))
    # in the order forward ran them (each loop's steps in turn), an edge that points back is one the
    # guesses above got wrong (a node between two steps' operations): dropping it keeps a DAG
    position: dict[int, int] = {}
    for i in range(len(graph.nodes)):
        if len(copies[i]) == 1:
            position[copies[i][0]] = len(position)
            continue
        members = loops[(graph.nodes[i].scope, len(copies[i]))]
        if i == members[0]:
            for k in range(len(copies[i])):
                for j in members:
                    position[copies[j][k]] = len(position)
    edges = sorted((a, b) for a, b in edges if position[a] < position[b])
    return ArchGraph(nodes, edges, dict(graph.meta)).canonicalize()


def _spread(edges: list[tuple[int, int]], copies: dict[int, list[int]], joins: list[bool],
            before: list[bool] | None = None) -> set[tuple[int, int]]:
    """Edges between copies: step k of one folded node feeds step k of the next; a node outside the
    loop feeds every step (one of the loop's first steps, `before`, the first only) and reads the
    last (a join such as `stack` reads every one). Without `before` (graphs folded before IR 13),
    folded steps of two lengths wrap round the shorter."""
    out = set()
    for s, d in edges:
        left, right = copies[s], copies[d]
        if len(right) == 1:  # a loop's result is its last step's, or what a join of every step reads
            out.update((a, right[0]) for a in (left if joins[d] else left[-1:]))
        elif len(left) == 1:  # what the loop reads from outside, every step reads
            out.update((left[0], b) for b in (right[:1] if before and before[s] else right))
        elif len(left) == len(right) or before is None:  # two folded steps: copy k to copy k
            out.update((left[k % len(left)], right[k % len(right)]) for k in range(max(len(left), len(right))))
        else:  # one loop's classes of two lengths (its ends fell unlike): copy to the copy as far along
            longer, shorter = (left, right) if len(left) > len(right) else (right, left)
            pairs = [(a, shorter[round(k * (len(shorter) - 1) / (len(longer) - 1))]) for k, a in enumerate(longer)]
            out.update(pairs if longer is left else [(b, a) for a, b in pairs])
    return out
