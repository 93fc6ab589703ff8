decl_intent("fix", "Fix it.").
decl_predicate("known", "input", "A declared predicate.").
decl_arg("known", 0, "x", "string").
decl_intent_fact("repair", "known", "required").
