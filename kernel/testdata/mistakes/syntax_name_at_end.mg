# An incident-triage domain with one mistake (see the .golden file).
decl_intent("triage", "Triage an open incident.").
decl_intent_fact("triage", "incident", "required").
decl_predicate("incident", "input", "An open incident: its id and service.").
decl_arg("incident", 0, "id", "string").
decl_arg("incident", 1, "service", "string").

tool("show_logs").
tool_description("show_logs", "Show the last lines of a service's log.").
tool_action("show_logs", "show_logs").
tool_param("show_logs", "service", "string", "The service.").
tool_param("show_logs", "lines", "integer", "How many lines.").
tool_param_required("show_logs", "service").
tool_param_default("show_logs", "lines", 50).
tool_param_enum("show_logs", "service", S) :- incident(_, S).
mandatory_for_intent("triage", "show_logs") :- incident(_, _).
hot(S) :- incident(_, S), S = /db.
