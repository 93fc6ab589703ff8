decl_intent("fix", "Fix it.").
tool("fixer").

# mystery/1 is neither declared, defined nor in the facts profile; the
# clause starts on line 6.
mandatory_for_intent("fix", Tool) :-
  tool(Tool),
  mystery(Tool).
