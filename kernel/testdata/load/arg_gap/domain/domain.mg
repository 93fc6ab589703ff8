decl_intent("fix", "Fix it.").
decl_predicate("sig", "input", "A signal.").
decl_arg("sig", 0, "name", "string").
decl_arg("sig", 2, "weight", "integer").
