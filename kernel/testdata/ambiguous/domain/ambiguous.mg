# Ambiguous attributes test domain (kernel/render_test.go): the
# rules derive several values for attributes that render as one value. The
# kernel must still render the same Result on every run (Contract 6).

decl_intent("pick", "Pick the one tool.").

tool("one").
tool_action("one", "act_b").
tool_action("one", "act_a").
mandatory_for_intent("pick", "one").

# Two types and descriptions for the same parameter, and two defaults. The
# second type comes from a rule: a constant one would be checked at load
# against the defaults.
tool_param("one", "mode", "string", "The mode, as text.").
tool_param("one", "mode", Type, "The mode, as a number.") :- mode_type(Type).
mode_type("integer").
tool_param_default("one", "mode", "fast").
tool_param_default("one", "mode", "safe").
tool_param_default("one", "mode", "zippy").
tool_param_enum("one", "mode", "fast").
tool_param_enum("one", "mode", "safe").
