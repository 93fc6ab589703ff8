decl_intent("fix", "Fix it.").
tool("fixer").

# A count that feeds itself: recursion through an aggregation.
counted(Tool) :- tool(Tool).
counted(Tool) :- total(Tool, _).
total(Tool, N) :- counted(Tool) |> do fn:group_by(Tool), let N = fn:count().
