decl_intent("fix", "Fix it.").
decl_intent_fact("fix", "block", "optional").
decl_predicate("block", "input", "Policy blocks the tool.").
decl_arg("block", 0, "tool", "string").

tool("fixer").
tool_action("fixer", "fix").
mandatory_for_intent("fix", "fixer").
