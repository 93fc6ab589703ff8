decl_intent("fix", "Fix it.").
decl_predicate("sig", "sideways", "A signal.").
