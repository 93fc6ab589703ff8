# Pack for Playwright MCP (@playwright/mcp, serverInfo "Playwright"): three
# intents for the jobs of a browser session, each offering the few tools
# its job needs.

decl_intent("browse", "Open a page, go back, switch tabs, read the page.").
decl_intent("interact", "Click, type, fill forms, select, press keys on a page.").
decl_intent("inspect_page", "Console messages, network requests, find text, screenshot.").

pw_tool(T, Name) :- upstream_pack(U, "playwright"), upstream_tool(U, T, Name).

mandatory_for_intent("browse", T) :- pw_tool(T, "browser_navigate").
relevant_to_intent("browse", T, 83) :- pw_tool(T, "browser_snapshot").
relevant_to_intent("browse", T, 79) :- pw_tool(T, "browser_navigate_back").
relevant_to_intent("browse", T, 77) :- pw_tool(T, "browser_tabs").
relevant_to_intent("browse", T, 75) :- pw_tool(T, "browser_wait_for").
relevant_to_intent("browse", T, 73) :- pw_tool(T, "browser_resize").
relevant_to_intent("browse", T, 71) :- pw_tool(T, "browser_close").

mandatory_for_intent("interact", T) :- pw_tool(T, "browser_click").
relevant_to_intent("interact", T, 85) :- pw_tool(T, "browser_type").
relevant_to_intent("interact", T, 83) :- pw_tool(T, "browser_fill_form").
relevant_to_intent("interact", T, 81) :- pw_tool(T, "browser_select_option").
relevant_to_intent("interact", T, 79) :- pw_tool(T, "browser_press_key").
relevant_to_intent("interact", T, 77) :- pw_tool(T, "browser_hover").
relevant_to_intent("interact", T, 75) :- pw_tool(T, "browser_handle_dialog").
relevant_to_intent("interact", T, 73) :- pw_tool(T, "browser_drag").
relevant_to_intent("interact", T, 72) :- pw_tool(T, "browser_file_upload").
relevant_to_intent("interact", T, 71) :- pw_tool(T, "browser_drop").

mandatory_for_intent("inspect_page", T) :- pw_tool(T, "browser_console_messages").
mandatory_for_intent("inspect_page", T) :- pw_tool(T, "browser_network_requests").
relevant_to_intent("inspect_page", T, 81) :- pw_tool(T, "browser_network_request").
relevant_to_intent("inspect_page", T, 79) :- pw_tool(T, "browser_find").
relevant_to_intent("inspect_page", T, 77) :- pw_tool(T, "browser_snapshot").
relevant_to_intent("inspect_page", T, 75) :- pw_tool(T, "browser_take_screenshot").
relevant_to_intent("inspect_page", T, 73) :- pw_tool(T, "browser_emulate_media").
relevant_to_intent("inspect_page", T, 71) :- pw_tool(T, "browser_evaluate").

tool_next_intent(T, "inspect_page", "Diagnose what the page did.") :- pw_tool(T, "browser_navigate").
tool_next_intent(T, "interact", "Act on the page.") :- pw_tool(T, "browser_snapshot").

# What the page did (the gateway reads browser_console_messages and
# browser_network_requests answers into these facts, which come back with
# the working state): a failed request puts its details first.
decl_predicate("pw_console", "both", "A console message of the page: level (error, warning, info, log, debug) and text.").
decl_arg("pw_console", 0, "level", "string").
decl_arg("pw_console", 1, "text", "string").
decl_predicate("pw_request", "both", "A network request of the page: method, URL and HTTP status.").
decl_arg("pw_request", 0, "method", "string").
decl_arg("pw_request", 1, "url", "string").
decl_arg("pw_request", 2, "status", "integer").
decl_intent_fact("inspect_page", "pw_console", "optional").
decl_intent_fact("inspect_page", "pw_request", "optional").
decl_intent_fact("interact", "pw_console", "optional").
decl_intent_fact("interact", "pw_request", "optional").
pw_failed_request(1) :- pw_request(_, _, S), S >= 400.
relevant_to_intent("inspect_page", T, 95) :- pw_tool(T, "browser_network_request"), pw_failed_request(1).
tool_instructions(T, "A request failed (status 400 or more): read it with this tool.") :- pw_tool(T, "browser_network_request"), pw_failed_request(1).
