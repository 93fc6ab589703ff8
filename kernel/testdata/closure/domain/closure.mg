# Closure test domain (kernel/gas_test.go): the transitive closure
# of the client's edge facts. A chain of N edges derives N*(N+1)/2 reach
# facts, so its cost is easy to scale: 3000 edges is about 4.5 million facts,
# which takes far longer than any test deadline.

decl_intent("explore", "Walk a graph given as edge facts.").
decl_intent_fact("explore", "edge", "required").

decl_predicate("edge", "input", "A directed edge of the graph.").
decl_arg("edge", 0, "from", "string").
decl_arg("edge", 1, "to", "string").

reach(A, B) :- edge(A, B).
reach(A, C) :- reach(A, B), edge(B, C).

tool("walk").
tool_action("walk", "walk").
mandatory_for_intent("explore", "walk") :- reach(_, _).
