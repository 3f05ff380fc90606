"""The rules that make graphs from different tracers agree, on hand-made raw graphs."""

from narcli.graph.canonical import RawGraph, RawOp, build_graph


def ops_of(graph):
    return sorted(graph.op_histogram().elements())


def test_reshape_like_ops_are_folded_and_edges_rewired():
    raw = RawGraph([("x", (1, 8))], [
        RawOp("relu", ["x"], ["a"], shape=(1, 8)),
        RawOp("view", ["a"], ["b"]),
        RawOp("transpose", ["b"], ["c"]),
        RawOp("sigmoid", ["c"], ["d"], shape=(8, 1)),
    ], ["d"])
    g = build_graph(raw)
    assert ops_of(g) == ["input", "output", "relu", "sigmoid"]
    assert g.depth == 4


def test_parameters_constants_and_shape_arithmetic_make_no_nodes():
    raw = RawGraph([("x", (1, 8))], [
        RawOp("size", ["x"], ["n"]),
        RawOp("arange", ["n"], ["r"]),
        RawOp("mul", ["w", "w"], ["w2"]),  # computed from a parameter only
        RawOp("add", ["x", "r"], ["y"], shape=(1, 8)),
    ], ["y"], param_shapes={"w": (8,)})
    assert ops_of(build_graph(raw)) == ["add", "input", "output"]


def test_matmul_by_weight_becomes_linear_and_its_bias_folds_in():
    raw = RawGraph([("x", (1, 4, 16))], [
        RawOp("matmul", ["x", "W"], ["h"], shape=(1, 4, 32), in_shapes=[(1, 4, 16), (16, 32)]),
        RawOp("add", ["h", "b"], ["y"], shape=(1, 4, 32)),
    ], ["y"], param_shapes={"W": (16, 32), "b": (32,)})
    g = build_graph(raw)
    assert ops_of(g) == ["input", "linear", "output"]
    linear = next(n for n in g.nodes if n.op == "linear")
    assert linear.attrs == {"in_features": 16, "out_features": 32}
    assert linear.params == 16 * 32 + 32
    assert g.macs == 4 * 32 * 16


def test_positional_embedding_add_is_not_a_bias():
    raw = RawGraph([("x", (1, 4, 16))], [
        RawOp("linear", ["x", "W"], ["h"], {"in_features": 16, "out_features": 16}, shape=(1, 4, 16)),
        RawOp("add", ["h", "pos"], ["y"], shape=(1, 4, 16)),
    ], ["y"], param_shapes={"W": (16, 16), "pos": (1, 4, 16)})
    assert "add" in ops_of(build_graph(raw))


def test_decomposed_attention_is_fused():
    q, k, v = (f"{n}" for n in "qkv")
    raw = RawGraph([("x", (1, 2, 4, 8))], [
        RawOp("relu", ["x"], [q], shape=(1, 2, 4, 8)),
        RawOp("sigmoid", ["x"], [k], shape=(1, 2, 4, 8)),
        RawOp("tanh", ["x"], [v], shape=(1, 2, 4, 8)),
        RawOp("mul", [q, "scale"], ["qs"], shape=(1, 2, 4, 8)),
        RawOp("transpose", [k], ["kt"]),
        RawOp("matmul", ["qs", "kt"], ["s"], shape=(1, 2, 4, 4), in_shapes=[(1, 2, 4, 8), (1, 2, 8, 4)]),
        RawOp("add", ["s", "mask"], ["sm"], shape=(1, 2, 4, 4)),
        RawOp("softmax", ["sm"], ["p"], shape=(1, 2, 4, 4)),
        RawOp("dropout", ["p"], ["pd"]),
        RawOp("matmul", ["pd", v], ["o"], shape=(1, 2, 4, 8), in_shapes=[(1, 2, 4, 4), (1, 2, 4, 8)]),
    ], ["o"])
    g = build_graph(raw)
    assert ops_of(g) == ["attention", "input", "output", "relu", "sigmoid", "tanh"]
    attention = next(i for i, n in enumerate(g.nodes) if n.op == "attention")
    assert len(g.parents()[attention]) == 3
    assert g.nodes[attention].macs == 2 * (2 * 4 * 4 * 8)


def test_slices_of_one_tensor_merge_into_one_split():
    raw = RawGraph([("x", (3, 8))], [
        RawOp("slice", ["x"], ["a"], shape=(8,)),
        RawOp("slice", ["x"], ["b"], shape=(8,)),
        RawOp("slice", ["x"], ["c"], shape=(8,)),
        RawOp("add", ["a", "b"], ["ab"], shape=(8,)),
        RawOp("mul", ["ab", "c"], ["y"], shape=(8,)),
    ], ["y"])
    g = build_graph(raw)
    assert ops_of(g) == ["add", "input", "mul", "output", "split"]


def test_unknown_ops_are_kept():
    raw = RawGraph([("x", (1,))], [RawOp("unknown:MyFancyOp", ["x"], ["y"], shape=(1,))], ["y"])
    assert "unknown:MyFancyOp" in ops_of(build_graph(raw))


def test_tied_parameters_count_once_unless_per_use():
    ops = [RawOp("embedding", ["ids", "E"], ["h"], shape=(1, 4, 8)),
           RawOp("linear", ["h", "E"], ["y"], {"in_features": 8, "out_features": 100}, shape=(1, 4, 100))]
    shared = RawGraph([("ids", (1, 4))], ops, ["y"], param_shapes={"E": (100, 8)})
    assert build_graph(shared).params == 800
    per_use = RawGraph([("ids", (1, 4))], ops, ["y"], param_shapes={"E": (100, 8)}, count_params_per_use=True)
    assert build_graph(per_use).params == 1600
