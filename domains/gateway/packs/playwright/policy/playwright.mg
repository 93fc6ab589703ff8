# Safety for Playwright MCP. Upstream marks every action destructive; in the
# headless, throw-away browser the gateway starts, navigating and ordinary
# page input are waived. Running code, uploading or dropping files, and
# closing the browser keep the user's confirmation; arbitrary Playwright
# code is never offered.
pw_waived("browser_navigate").
pw_waived("browser_navigate_back").
pw_waived("browser_tabs").
pw_waived("browser_resize").
pw_waived("browser_click").
pw_waived("browser_type").
pw_waived("browser_fill_form").
pw_waived("browser_select_option").
pw_waived("browser_press_key").
pw_waived("browser_hover").
pw_waived("browser_handle_dialog").
pw_waived("browser_drag").
pw_waived("browser_emulate_media").
confirmation_waived(T) :- upstream_pack(U, "playwright"), upstream_tool(U, T, Name), pw_waived(Name).
# Kept behind confirmation whatever the upstream's annotations say.
pw_confirmed("browser_evaluate").
pw_confirmed("browser_file_upload").
pw_confirmed("browser_drop").
pw_confirmed("browser_close").
pw_confirmed("browser_run_code_unsafe").
pack_confirms(T) :- upstream_pack(U, "playwright"), upstream_tool(U, T, Name), pw_confirmed(Name).
prohibited(T, "runs arbitrary code; not offered through the gateway") :- upstream_pack(U, "playwright"), upstream_tool(U, T, "browser_run_code_unsafe").
