prohibited("fixer", "never") :- tool("fixer").
