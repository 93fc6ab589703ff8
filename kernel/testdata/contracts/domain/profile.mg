# Contracts test domain (kernel/contracts_test.go): every selection
# input of the pipeline is driven by client facts, so that each test case
# states its scenario as facts.

decl_intent("fix", "Fix something; tools come from score and must facts.").
decl_intent("other", "An unrelated intent with its own tool.").

decl_intent_fact("fix", "score", "optional").
decl_intent_fact("fix", "must", "optional").
decl_intent_fact("fix", "block", "optional").
decl_intent_fact("other", "score", "optional").

decl_predicate("score", "input", "The tool is relevant to fix with this score.").
decl_arg("score", 0, "tool", "string").
decl_arg("score", 1, "score", "integer").

decl_predicate("must", "input", "The tool is mandatory for fix.").
decl_arg("must", 0, "tool", "string").

decl_predicate("block", "input", "Policy prohibits the tool.").
decl_arg("block", 0, "tool", "string").
