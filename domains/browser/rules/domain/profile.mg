# Manifest declarations of the browser-diagnostics domain: intents and the
# facts profile (Spec 04 sections 3.2.6-3.2.7). The kernel reads these facts
# at start-up; they must stay plain facts.

decl_intent("observe", "Observe the current browser page: console, network and page state: open_page(url).").
decl_intent("diagnose_error", "Diagnose page errors with causal chain analysis from failed requests to console errors.").
decl_intent("automate", "Plan a validated automation step on an interactive element of the current page.").

decl_intent_fact("observe", "current_url", "required").
decl_intent_fact("observe", "console_event", "optional").
decl_intent_fact("observe", "net_request", "optional").
decl_intent_fact("observe", "net_response", "optional").
decl_intent_fact("diagnose_error", "current_url", "required").
decl_intent_fact("diagnose_error", "console_event", "optional").
decl_intent_fact("diagnose_error", "net_request", "optional").
decl_intent_fact("diagnose_error", "net_response", "optional").
decl_intent_fact("automate", "current_url", "required").
decl_intent_fact("automate", "automation_goal", "optional").
decl_intent_fact("automate", "interactive_element", "optional").
decl_intent_fact("observe", "browser_session", "optional").
decl_intent_fact("diagnose_error", "browser_session", "optional").
decl_intent_fact("automate", "browser_session", "optional").


decl_predicate("current_url", "input", "The URL of the current browser page.").
decl_arg("current_url", 0, "url", "string").

decl_predicate("console_event", "both", "A browser console event.").
decl_arg("console_event", 0, "session_id", "string").
decl_arg("console_event", 1, "level", "string").
decl_arg("console_event", 2, "message", "string").
decl_arg("console_event", 3, "timestamp", "integer").

decl_temporal("console_event").

decl_predicate("net_request", "input", "A network request the page sent.").
decl_arg("net_request", 0, "session_id", "string").
decl_arg("net_request", 1, "request_id", "string").
decl_arg("net_request", 2, "method", "string").
decl_arg("net_request", 3, "url", "string").
decl_arg("net_request", 4, "timestamp", "integer").

decl_temporal("net_request").

decl_predicate("net_response", "input", "The HTTP response to a network request.").
decl_arg("net_response", 0, "session_id", "string").
decl_arg("net_response", 1, "request_id", "string").
decl_arg("net_response", 2, "status", "integer").
decl_arg("net_response", 3, "timestamp", "integer").

decl_temporal("net_response").

decl_predicate("automation_goal", "input", "What the user wants to automate, in words.").
decl_arg("automation_goal", 0, "goal", "string").

decl_predicate("interactive_element", "input", "An element the page offers for interaction.").
decl_arg("interactive_element", 0, "element_id", "string").
decl_arg("interactive_element", 1, "kind", "string").
decl_arg("interactive_element", 2, "label", "string").

decl_predicate("browser_session", "both", "A live session of the server's browser (open_page starts it) and its current page: click_element and fill_field act on that page as it is.").
decl_arg("browser_session", 0, "session_id", "string").
decl_arg("browser_session", 1, "url", "string").

decl_predicate("diagnosed_error", "output", "A failed request diagnosed as the cause of console errors (state delta).").
decl_arg("diagnosed_error", 0, "request_id", "string").
decl_arg("diagnosed_error", 1, "root_cause", "string").

decl_predicate("report_written", "output", "A diagnosis report the server wrote (state delta).").
decl_arg("report_written", 0, "report", "string").
decl_arg("report_written", 1, "request_id", "string").

# The live page as facts (issue 28): open_page and every action on a live
# session assert them (the state delta retracts the previous page's), read
# from the page's accessibility tree. A client carries them in its state
# and sends them back; it does not state them, so no intent lists them
# among the facts a client may state (and an MCP host's intent tools stay
# short). A ref is what actions take: the
# element's accessible name (or its role when it has none), with " #2",
# " #3" for later elements of the same name.
decl_predicate("page_element", "both", "An element of the live page (accessibility tree): its ref, which actions take, its role (heading, link, button, textbox, combobox, checkbox, table, alert, dialog, ...) and its accessible name.").
decl_arg("page_element", 0, "ref", "string").
decl_arg("page_element", 1, "role", "string").
decl_arg("page_element", 2, "name", "string").

decl_predicate("field_state", "both", "A form field of the live page: its value, whether it is required, and whether the page marks it invalid.").
decl_arg("field_state", 0, "ref", "string").
decl_arg("field_state", 1, "value", "string").
decl_arg("field_state", 2, "required", "boolean").
decl_arg("field_state", 3, "invalid", "boolean").

decl_predicate("option_of", "both", "An option of a select (combobox or listbox) of the live page, and whether it is selected.").
decl_arg("option_of", 0, "field", "string").
decl_arg("option_of", 1, "option", "string").
decl_arg("option_of", 2, "selected", "boolean").

decl_predicate("table_cell", "both", "A cell of a table of the live page: the table's ref, the row (from 1, header rows included), the column's header (or column N) and the cell's text.").
decl_arg("table_cell", 0, "table", "string").
decl_arg("table_cell", 1, "row", "integer").
decl_arg("table_cell", 2, "column", "string").
decl_arg("table_cell", 3, "text", "string").

decl_predicate("table_row_key", "both", "The text of a table row's first cell with text (what names the row: an account, a product).").
decl_arg("table_row_key", 0, "table", "string").
decl_arg("table_row_key", 1, "row", "integer").
decl_arg("table_row_key", 2, "key", "string").

decl_predicate("page_alert", "both", "An alert or status message the live page shows (role alert or status).").
decl_arg("page_alert", 0, "ref", "string").
decl_arg("page_alert", 1, "text", "string").

decl_predicate("page_dialog", "both", "A JavaScript dialog (alert, confirm, prompt, beforeunload) the live page opened, waiting for answer_dialog; nothing else runs until it is answered.").
decl_arg("page_dialog", 0, "kind", "string").
decl_arg("page_dialog", 1, "message", "string").

decl_predicate("browser_tab", "both", "A tab of the live session: its index (from 1), title and URL, and whether it is the current one.").
decl_arg("browser_tab", 0, "index", "integer").
decl_arg("browser_tab", 1, "title", "string").
decl_arg("browser_tab", 2, "url", "string").
decl_arg("browser_tab", 3, "current", "boolean").

decl_predicate("payment_field", "both", "A field of the live page that takes payment card data (by its label); the policy forbids acting on such a page.").
decl_arg("payment_field", 0, "ref", "string").
