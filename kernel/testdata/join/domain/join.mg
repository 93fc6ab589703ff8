# Join test domain (kernel/gas_test.go, TestWorkBudget): rules that
# join the client's facts pairwise and derive almost nothing. With N left
# and M right facts, each rule looks at N*M facts and derives at most N, so
# the created-facts limit never trips; only the work budget bounds them.

decl_intent("match", "Find the left keys that also appear on the right.").
decl_intent_fact("match", "left", "required").
decl_intent_fact("match", "right", "optional").
decl_intent_fact("match", "event", "optional").

decl_predicate("left", "input", "A key on the left.").
decl_arg("left", 0, "key", "string").

decl_predicate("right", "input", "A key on the right.").
decl_arg("right", 0, "key", "string").

decl_predicate("event", "input", "A key that was seen at some time.").
decl_arg("event", 0, "key", "string").
decl_temporal("event").

# Every left key scans every right fact: N*M. (right is looked up with its
# key unbound, so the store's index cannot narrow the scan.)
paired(K) :- left(K), right(R), R = K.
# The same through the temporal store (event is looked up with its key
# unbound too).
seen(K) :- left(K), event(E)@[From, To], E = K.

tool("pair").
tool_action("pair", "pair").
mandatory_for_intent("match", "pair") :- left(_).
