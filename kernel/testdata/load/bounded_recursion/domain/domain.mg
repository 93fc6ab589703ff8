decl_intent("fix", "Fix it.").
decl_intent_fact("fix", "block", "optional").
decl_predicate("block", "input", "Policy blocks the tool.").
decl_arg("block", 0, "tool", "string").
decl_predicate("count", "input", "A count.").
decl_arg("count", 0, "n", "integer").

tool("fixer").
tool_action("fixer", "fix").
mandatory_for_intent("fix", "fixer").

step(0).
step(M) :- step(N), N < 10, M = fn:plus(N, 1).
reach(A, B) :- block(A), block(B).
reach(A, C) :- reach(A, B), reach(B, C).
big(N) :- count(N), N > 10.
