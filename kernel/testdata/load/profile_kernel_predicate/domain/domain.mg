decl_intent("fix", "Fix it.").
decl_predicate("intent", "input", "Clients may not assert intents as facts.").
decl_arg("intent", 0, "name", "string").
