decl_intent("fix", "Fix it.").
tool("fixer").
# A domain may not add prohibitions (or remove them by shadowing).
prohibited("other", "also never").
