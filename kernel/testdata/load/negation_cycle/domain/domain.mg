decl_intent("fix", "Fix it.").
tool("fixer").
tool("helper").

# p and q each hold where the other does not: no stratification exists.
p(Tool) :- tool(Tool), !q(Tool).
q(Tool) :- tool(Tool), !p(Tool).
