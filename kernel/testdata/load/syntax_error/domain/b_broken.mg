# The clause on line 5 misses a closing parenthesis.
tool_action("fixer", "fix").

mandatory_for_intent("fix", "fixer").
relevant_to_intent("fix", "fixer", 50 :- tool("fixer").
tool_idempotent("fixer").
