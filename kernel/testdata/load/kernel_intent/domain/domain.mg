decl_intent("fix", "Fix it.").
tool("fixer").
mandatory_for_intent("fix", "fixer").
# Only the kernel asserts intent/1.
intent("fix") :- tool("fixer").
