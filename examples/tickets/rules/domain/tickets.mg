# The tickets domain: one intent, one predicate, one tool.

# What the manifest advertises: the intent and the fact it needs.
decl_intent("triage", "Triage open support tickets.").
decl_intent_fact("triage", "ticket", "required").
decl_predicate("ticket", "input", "An open support ticket and its severity (1-5).").
decl_arg("ticket", 0, "id", "string").
decl_arg("ticket", 1, "severity", "integer").

# The tool: what it is, the action that runs it, its one parameter.
tool("escalate_ticket").
tool_description("escalate_ticket", "Escalate a severe ticket (severity 4 or 5) to the on-call queue.").
tool_summary("escalate_ticket", "Escalate a severe ticket.").
tool_action("escalate_ticket", "escalate").
tool_param("escalate_ticket", "ticket_id", "string", "The ticket to escalate.").
tool_param_required("escalate_ticket", "ticket_id").

# The decisions: the tool is proposed only when a severe ticket exists,
# and only severe tickets may be passed to it.
severe(Id) :- ticket(Id, Severity), Severity >= 4.
mandatory_for_intent("triage", "escalate_ticket") :- severe(_).
tool_param_enum("escalate_ticket", "ticket_id", Id) :- severe(Id).
