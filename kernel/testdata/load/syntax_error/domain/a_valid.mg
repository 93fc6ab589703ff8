decl_intent("fix", "Fix it.").
tool("fixer").
