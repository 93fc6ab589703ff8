# Which tools answer which intent (phases 1 and 3 of the pipeline).

# summarize_observation summarizes facts the client stated. When the
# server's browser can open the page instead (open_page), it is only
# listed at a low score (minimal disclosure) unless such facts exist.
mandatory_for_intent("observe", "summarize_observation") :- !browser_offered(1).
mandatory_for_intent("observe", "summarize_observation") :- stated_observation(1).
relevant_to_intent("observe", "summarize_observation", 30) :- browser_offered(1).
stated_observation(1) :- console_event(_, _, _, _).
stated_observation(1) :- net_request(_, _, _, _, _).
stated_observation(1) :- net_response(_, _, _, _).
relevant_to_intent("observe", "inspect_console_errors", 50) :- console_error(_, _, _).

# Diagnosis is offered while a console error is recent (five minutes).
mandatory_for_intent("diagnose_error", "inspect_console_errors") :- has_recent_console_error(1).
mandatory_for_intent("diagnose_error", "diagnose_causal_chain") :- failure_followed_by_error(_), has_recent_console_error(1).
relevant_to_intent("diagnose_error", "write_diagnosis_report", 60) :- failure_followed_by_error(_), has_recent_console_error(1).

# ... and stays valid only as long as the error stays recent.
recency_bound("inspect_console_errors").
recency_bound("diagnose_causal_chain").
recency_bound("write_diagnosis_report").
tool_valid_until(Tool, Until) :- intent("diagnose_error"), recency_bound(Tool), last_error_window_end(Until), !has_open_console_error(1).
tool_valid_from(Tool, Now) :- intent("diagnose_error"), recency_bound(Tool), eval_time(Now).

# With a browser that can act on the page (click_element, fill_field),
# the plan is listed at a low score (minimal disclosure).
mandatory_for_intent("automate", "plan_automation") :- automation_goal(_), interactive_element(Element, _, _), !page_has_payment_form(Element), !browser_offered(1).
relevant_to_intent("automate", "plan_automation", 30) :- automation_goal(_), interactive_element(Element, _, _), !page_has_payment_form(Element), browser_offered(1).
