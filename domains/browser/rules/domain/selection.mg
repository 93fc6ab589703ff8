# Which tools answer which intent (phases 1 and 3 of the pipeline).

mandatory_for_intent("observe", "summarize_observation").
relevant_to_intent("observe", "inspect_console_errors", 50) :- console_error(_, _, _).

mandatory_for_intent("diagnose_error", "inspect_console_errors") :- console_error(_, _, _).
mandatory_for_intent("diagnose_error", "diagnose_causal_chain") :- failure_followed_by_error(_).
relevant_to_intent("diagnose_error", "write_diagnosis_report", 60) :- failure_followed_by_error(_).

mandatory_for_intent("automate", "plan_automation") :- automation_goal(_), interactive_element(Element, _, _), !page_has_payment_form(Element).
