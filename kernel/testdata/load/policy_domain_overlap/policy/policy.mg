# The policy layer owns prohibited/2.

prohibited("fixer", "never") :- tool("fixer").
