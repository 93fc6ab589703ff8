decl_intent("fix", "Fix it.").
decl_predicate("known", "input", "A declared predicate.").
decl_arg("known", 0, "x", "string").
decl_intent_fact("fix", "known", "required").
decl_intent_fact("fix", "unknown", "optional").
tool("fixer").
