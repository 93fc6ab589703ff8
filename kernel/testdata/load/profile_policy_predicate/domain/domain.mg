decl_intent("fix", "Fix it.").
tool("fixer").
# A client could add prohibitions that policy does not intend, or pick the
# reasons; policy predicates are output only.
decl_predicate("prohibited", "input", "Clients may not supply policy facts.").
decl_arg("prohibited", 0, "tool", "string").
decl_arg("prohibited", 1, "reason", "string").
