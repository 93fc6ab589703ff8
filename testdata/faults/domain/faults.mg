# A test domain whose actions fail on purpose: a panic, an error carrying
# internal details, a result that cannot be encoded and an action that only
# stops when its context ends. Used by the server tests to prove failures are
# contained and masked.
decl_intent("fault", "Return the tool named by the request's fault fact.").
decl_intent_fact("fault", "fault", "required").
decl_predicate("fault", "input", "Which failing tool to return.").
decl_arg("fault", 0, "tool", "string").

tool("panicky").
tool_action("panicky", "panic").
tool("failing").
tool_action("failing", "fail").
tool("unencodable").
tool_action("unencodable", "nan").
tool("slow").
tool_action("slow", "block").

mandatory_for_intent("fault", Tool) :- fault(Tool).
tool_description(Tool, "A tool that fails on purpose.") :- fault(Tool).
