# A test domain whose actions return error codes: one its domain
# registered, one nobody registered, and a standard code. Used by
# domaincodes_test.go to prove domain codes pass with their registered
# status and unregistered ones are masked.
decl_intent("code", "Return the tool named by the request's code fact.").
decl_intent_fact("code", "code", "required").
decl_predicate("code", "input", "Which tool to return.").
decl_arg("code", 0, "tool", "string").

tool("registered").
tool_action("registered", "registered").
tool("unregistered").
tool_action("unregistered", "unregistered").
tool("standard").
tool_action("standard", "standard").

mandatory_for_intent("code", Tool) :- code(Tool).
tool_description(Tool, "A tool that fails with an error code.") :- code(Tool).
