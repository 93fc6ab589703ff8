# The tool catalogue: capabilities, the actions that run them, their
# parameters (enums derived from the request's facts) and side effects.

tool("summarize_observation").
tool_action("summarize_observation", "observe_summary").
tool_description("summarize_observation", "Summarize the observed page state: URL, console events by level, network requests and failed responses.").
tool_summary("summarize_observation", "Summarize console and network state of the page.").
tool_param("summarize_observation", "focus", "string", "What to summarize: console, network or all.").
tool_param_enum("summarize_observation", "focus", "all").
tool_param_enum("summarize_observation", "focus", "console").
tool_param_enum("summarize_observation", "focus", "network").
tool_param_default("summarize_observation", "focus", "all").
tool_idempotent("summarize_observation").
tool_evidence("summarize_observation", "current_url").
tool_next_intent("summarize_observation", "diagnose_error", "Console errors were observed: diagnose them.") :- console_error(_, _, _).

tool("inspect_console_errors").
tool_action("inspect_console_errors", "console_errors").
tool_description("inspect_console_errors", "List the console errors of the page, grouped by message, with first and last occurrence.").
tool_summary("inspect_console_errors", "List console errors grouped by message.").
tool_param("inspect_console_errors", "session_id", "string", "Only errors of this browser session.").
tool_param_enum("inspect_console_errors", "session_id", Session) :- console_error(Session, _, _).
tool_idempotent("inspect_console_errors").
tool_evidence("inspect_console_errors", "console_event") :- console_error(_, _, _).

tool("diagnose_causal_chain").
tool_action("diagnose_causal_chain", "causal_chain").
tool_description("diagnose_causal_chain", "Trace the causal chain from a failed network request to the console errors that followed it in the same session.").
tool_summary("diagnose_causal_chain", "Trace a failed request to the console errors it caused.").
tool_param("diagnose_causal_chain", "request_id", "string", "The failed request to trace.").
tool_param_required("diagnose_causal_chain", "request_id").
tool_param_enum("diagnose_causal_chain", "request_id", Request) :- failed_request(Request), request_id_fits(Request).
tool_param("diagnose_causal_chain", "include_network", "boolean", "Include the request and response in the chain.").
tool_param_default("diagnose_causal_chain", "include_network", /true).
tool_idempotent("diagnose_causal_chain").
tool_instructions("diagnose_causal_chain", "Pick the failed request whose response preceded the console error; the chain lists request, response and each later error of that session.").
tool_evidence("diagnose_causal_chain", "net_response") :- failed_request(_).
tool_evidence("diagnose_causal_chain", "console_event") :- failure_followed_by_error(_).
tool_next_intent("diagnose_causal_chain", "observe", "Observe the page again after fixing the failing request.").
tool_requires("diagnose_causal_chain", "inspect_console_errors").

tool("write_diagnosis_report").
tool_action("write_diagnosis_report", "write_report").
tool_description("write_diagnosis_report", "Write a Markdown diagnosis report of a failed request's causal chain into the server's report directory.").
tool_summary("write_diagnosis_report", "Write a diagnosis report file on the server.").
tool_param("write_diagnosis_report", "request_id", "string", "The failed request the report is about.").
tool_param_required("write_diagnosis_report", "request_id").
tool_param_enum("write_diagnosis_report", "request_id", Request) :- failed_request(Request), request_id_fits(Request).
tool_param("write_diagnosis_report", "title", "string", "The report's title.").
tool_param_default("write_diagnosis_report", "title", "Diagnosis report").
tool_evidence("write_diagnosis_report", "net_response") :- failed_request(_).
tool_requires("write_diagnosis_report", "diagnose_causal_chain").
# report_exists is an external predicate (computed by Go from the report directory).
tool_instructions("write_diagnosis_report", "A report for this request is already on the server; writing again adds a new one.") :-
  failure_followed_by_error(Request), report_exists(Request).

tool("plan_automation").
tool_action("plan_automation", "automation_plan").
tool_description("plan_automation", "Build a validated automation plan for one element of the page: check the URL, locate the element, perform the action and verify it.").
tool_summary("plan_automation", "Plan a validated automation step.").
tool_param("plan_automation", "target_element", "string", "The element to act on.").
tool_param_required("plan_automation", "target_element").
tool_param_enum("plan_automation", "target_element", Element) :- interactive_element(Element, _, _), !page_has_payment_form(Element).
tool_param("plan_automation", "action", "string", "What to do with the element.").
tool_param_required("plan_automation", "action").
tool_param_enum("plan_automation", "action", "click").
tool_param_enum("plan_automation", "action", "fill").
tool_param_enum("plan_automation", "action", "read").
tool_param("plan_automation", "value", "string", "The text to fill in (fill only).").
tool_idempotent("plan_automation").
tool_evidence("plan_automation", "automation_goal").
tool_evidence("plan_automation", "interactive_element").

# Side effects are derived from what the action does.
action_effect("write_report", "filesystem").
pure_action("observe_summary").
pure_action("console_errors").
pure_action("causal_chain").
pure_action("automation_plan").
tool_side_effect(Tool, Effect) :- tool_action(Tool, Action), action_effect(Action, Effect).
tool_side_effect(Tool, "none") :- tool_action(Tool, Action), pure_action(Action).

# Skills, injected only when a rule proves them necessary, and context
# resources with why they matter.
skill("causal-chain-reading", "Reading a causal chain", "How to read a request-to-error causal chain and decide what to fix first.").
skill_content("causal-chain-reading", "A causal chain lists the failed request, its response and each console error of the same session that followed it, in time order. Fix the earliest failing request first: errors that follow it in the same session are usually its consequences. A chain with no errors after the response means the failure is not the cause.").
skill_inline("causal-chain-reading").
skill("diagnosis-report-style", "Diagnosis report style", "The structure a diagnosis report follows and how to review it.").
skill_content("diagnosis-report-style", "# Diagnosis reports\n\nA report states the page, the failed request, the root cause and a confidence, then numbers each step of the causal chain with its timestamp. Review the root cause against the server logs of the failing endpoint before sharing the report; the report is written on the server and overwritten by a later report for the same request and macro-tool.").
skill_resource("diagnosis-report-style", "https://www.rfc-editor.org/rfc/rfc9110#name-status-codes", "text/html", "HTTP status code semantics").

tool_skill("diagnose_causal_chain", "causal-chain-reading") :- failure_followed_by_error(_).
tool_skill("write_diagnosis_report", "diagnosis-report-style").
tool_skill("write_diagnosis_report", "causal-chain-reading") :- failure_followed_by_error(_).

tool_context_resource("diagnose_causal_chain", Url, "The endpoint whose failed response preceded the console errors.", 90) :-
  failure_followed_by_error(Request), request(_, Request, _, Url, _).
tool_context_resource(Tool, Url, "The page where the errors were observed.", 50) :-
  recency_bound(Tool), current_url(Url).
