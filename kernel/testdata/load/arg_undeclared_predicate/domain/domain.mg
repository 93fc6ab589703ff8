decl_intent("fix", "Fix it.").
decl_arg("sig", 0, "name", "string").
