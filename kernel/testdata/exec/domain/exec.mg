# Differential test domain (kernel/exec_test.go): one rule for
# each kind of premise, binding and transform the kernel's own evaluator
# handles, and the kinds it leaves to the engine (recursion, a temporal
# head). Every derived predicate is compared between the two.

decl_intent("probe", "Exercise every kind of premise.").
decl_intent_fact("probe", "item", "optional").
decl_intent_fact("probe", "edge", "optional").
decl_intent_fact("probe", "tick", "optional").
decl_intent_fact("probe", "tag", "optional").

decl_predicate("item", "input", "An item with a kind and a size.").
decl_arg("item", 0, "name", "string").
decl_arg("item", 1, "kind", "string").
decl_arg("item", 2, "size", "integer").

decl_predicate("edge", "input", "A directed edge between items.").
decl_arg("edge", 0, "from", "string").
decl_arg("edge", 1, "to", "string").

decl_predicate("tick", "input", "An item was seen at some time.").
decl_arg("tick", 0, "name", "string").
decl_arg("tick", 1, "note", "string").
decl_temporal("tick").

decl_predicate("tag", "input", "A label on an item.").
decl_arg("tag", 0, "name", "string").
decl_arg("tag", 1, "label", "string").

kind_weight("a", 3).
kind_weight("b", 5).

# Builtins, negation, inequality, repeated variables.
big(N) :- item(N, _, S), :gt(S, 10).
small(N) :- item(N, _, _), !big(N).
same_kind(A, B) :- item(A, K, _), item(B, K, _), A != B.
self_edge(A) :- edge(A, A).
tagged(N) :- tag(N, _).
untagged(N) :- item(N, _, _), !tagged(N).
starts_a(N) :- item(N, _, _), :string:starts_with(N, "a").
# Equalities that bind and that test; expressions in heads and bodies.
label(N, L) :- item(N, K, _), L = fn:string:concat(K, "/", N).
heavy(N) :- item(N, K, S), kind_weight(K, W), fn:mult(S, W) = P, :gt(P, 40).
weighted(N, P) :- item(N, K, S), kind_weight(K, W), P = fn:mult(S, W).
plus_one(N, fn:plus(S, 1)) :- item(N, _, S).
exact(N) :- item(N, _, S), S = 7.
# Transforms.
doubled(N, D) :- item(N, _, S) |> let D = fn:mult(S, 2).
count_kind(K, C) :- item(_, K, _) |> do fn:group_by(K), let C = fn:count().
max_big(K, M) :- item(N, K, S), big(N) |> do fn:group_by(K), let M = fn:max(S).
label_count(C) :- label(_, _) |> do fn:group_by(), let C = fn:count().
tag_list(N, L) :- tag(N, X) |> do fn:group_by(N), let L = fn:collect(X).
hot(N) :- tag_list(N, L), :list:member(X, L), X = "hot".
# Temporal premises.
seen(N, From, To) :- tick(N, _)@[From, To].
recent(N) :- <-[0s, 10m] tick(N, _).
always(N) :- [-[0s, 1m] tick(N, _).
seen_big(N) :- big(N), tick(N, _)@[_, _].
# Linear recursion, evaluated by the kernel.
reach(A, B) :- edge(A, B).
reach(A, C) :- reach(A, B), edge(B, C).
loop(A) :- reach(A, A).
# Left to the engine: non-linear recursion, a temporal head.
far(A, B) :- edge(A, B).
far(A, C) :- far(A, B), far(B, C).
flagged(N) @[T] :- big(N), eval_time(T).
after_loop(N) :- loop(N), !small(N).

tool("inspect").
tool_action("inspect", "inspect").
mandatory_for_intent("probe", "inspect") :- big(_).
tool("walk").
tool_action("walk", "walk").
relevant_to_intent("probe", "walk", 40) :- loop(_).
