decl_intent("fix", "Fix it.").
tool("fixer").

tool_rank("fixer", 0).
