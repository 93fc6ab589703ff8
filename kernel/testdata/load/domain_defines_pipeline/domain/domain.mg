decl_intent("fix", "Fix it.").
tool("fixer").
excluded(Tool) :- tool(Tool).
