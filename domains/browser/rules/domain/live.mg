# Live sessions (issue 28): the page as facts, and the actions an agent
# uses, each offered only when the page makes it possible.
#
# open_page starts a session; it and every action below assert the page
# after the call as facts (page_element, field_state, option_of,
# table_cell, page_alert, page_dialog, browser_tab). These rules decide
# which of them each answer carries: the fields of the page's form become
# fill_form's parameters (their options its enums), the elements one can
# click click_element's enum, and the alerts, headings and tables the
# instructions of find_on_page, which reads the rest on request. The
# whole page is never in an answer. Text the page wrote (alerts, headings,
# labels, captions, cells, dialogs, titles) is quoted and escaped
# (page_quoted): it is the page's, not an instruction, and it cannot end
# its quotes.

# A live page that can act: a session, and no dialog waiting.
dialog_open(1) :- page_dialog(_, _).
page_live(1) :- has_live_session(1), !dialog_open(1).

clickable_role("button").
clickable_role("link").
clickable_role("checkbox").
clickable_role("radio").
clickable_role("switch").
clickable_role("tab").
clickable_role("menuitem").
clickable_role("menuitemcheckbox").
clickable_role("menuitemradio").
clickable_role("treeitem").
boolean_role("checkbox").
boolean_role("radio").
boolean_role("switch").

clickable(Ref) :- page_element(Ref, Role, _), clickable_role(Role).
field(Ref, Role) :- field_state(Ref, _, _, _), page_element(Ref, Role, _).
has_clickable(1) :- clickable(_).
has_field(1) :- field(_, _).
has_button(1) :- page_element(_, "button", _).
table_row(Table, Row) :- table_cell(Table, Row, _, _).
table_rows(Table, N) :- table_row(Table, _) |> do fn:group_by(Table), let N = fn:count().
tab_open(I) :- browser_tab(I, _, _, _).
tab_count(N) :- tab_open(_) |> do fn:group_by(), let N = fn:count().
more_tabs(1) :- tab_count(N), N > 1.

# click_element on a live page: the elements one can click, by ref.
tool_param_enum("click_element", "element_id", Ref) :- page_live(1), clickable(Ref).

tool("fill_form").
tool_action("fill_form", "browser_fill_form").
tool_description("fill_form", "Fill the live page's form in one call: each field is a parameter named by its label (text is typed, an option chosen, true checks a box); submit names the button pressed after.").
tool_summary("fill_form", "Fill the page's form fields in one call.").
# A field labelled "submit" would take the button's parameter: it is
# not offered (click_element and press_key still reach it).
form_field(Ref, Role) :- page_live(1), field(Ref, Role), Ref != "submit".
# Each field takes its value whole, in the form its kind says (a native
# date is one parameter, "2026-11-30", never its day, month and year
# parts); the browser reads every value back and says what a field holds
# when it is not what was asked.
value_format("date", "A date, YYYY-MM-DD.").
value_format("time", "A time, HH:MM.").
value_format("datetime-local", "A date and time, YYYY-MM-DDTHH:MM.").
value_format("month", "A month, YYYY-MM.").
value_format("week", "A week, YYYY-Www.").
value_format("color", "A colour, #rrggbb.").
value_format("slider", "A number.").
formatted_role(Role) :- value_format(Role, _).
# A list box (a multiple select, an ARIA list box) takes a list of its
# options.
list_role("listbox").
tool_param("fill_form", Ref, "string", "A field of the page.") :- form_field(Ref, Role), !boolean_role(Role), !formatted_role(Role), !list_role(Role).
tool_param("fill_form", Ref, "string", Format) :- form_field(Ref, Role), value_format(Role, Format).
tool_param("fill_form", Ref, "array", "Options to choose.") :- form_field(Ref, Role), list_role(Role).
tool_param("fill_form", Ref, "boolean", "A box of the page: true checks it, false clears it.") :- form_field(Ref, Role), boolean_role(Role).
tool_param_enum("fill_form", Ref, Option) :- form_field(Ref, _), option_of(Ref, Option, _).
tool_param("fill_form", "submit", "string", "A button to press after filling.") :- page_live(1), has_field(1), has_button(1).
tool_param_enum("fill_form", "submit", Ref) :- page_live(1), has_field(1), page_element(Ref, "button", _).
tool_instructions("fill_form", Text) :- page_live(1), field_state(Ref, _, _, /true), page_quoted(Ref, Q), Text = fn:string:concat(Q, " is invalid.").
tool_instructions("fill_form", Text) :- page_live(1), field_state(Ref, "", /true, /false), page_quoted(Ref, Q), Text = fn:string:concat(Q, " is required.").
tool_evidence("fill_form", "field_state").
tool_next_intent("fill_form", "automate", "Go on with the page the form led to.").
tool_next_intent("fill_form", "diagnose_error", "If the page saw console errors or failed requests, diagnose them.").

tool("find_on_page").
tool_action("find_on_page", "browser_find").
tool_description("find_on_page", "Find what the live page says about a text: the elements whose name or value contains it, and the table rows with a cell that does (with their column headers).").
tool_summary("find_on_page", "Find elements and table rows that match a text.").
tool_param("find_on_page", "text", "string", "The text to look for (case-insensitive).").
tool_param_required("find_on_page", "text").
tool_idempotent("find_on_page").
tool_evidence("find_on_page", "page_element").
tool_instructions("find_on_page", Text) :- page_live(1), page_alert(_, Alert), page_quoted(Alert, Q), Text = fn:string:concat("Alert: ", Q, ".").
tool_instructions("find_on_page", Text) :- page_live(1), page_element(_, "heading", Name), page_quoted(Name, Q), Text = fn:string:concat("Heading: ", Q, ".").
tool_instructions("find_on_page", Text) :- page_live(1), table_rows(Table, N), page_quoted(Table, Q), Text = fn:string:concat("Table ", Q, ": ", N, " rows.").
# A dialog of the page itself (role dialog or alertdialog, a modal
# <dialog>): its elements are the ones offered while it is open.
page_modal(Name) :- page_live(1), page_element(_, "dialog", Name).
page_modal(Name) :- page_live(1), page_element(_, "alertdialog", Name).
tool_instructions("click_element", Text) :- page_modal(Name), page_quoted(Name, Q), Text = fn:string:concat("A dialog is open: ", Q, ".").
# What the goal names (automation_goal, the model's words) comes without a
# find: the rows of a table whose key the goal mentions, and its links.
goal_row(Table, Row) :- page_live(1), automation_goal(Goal), table_row_key(Table, Row, Key), :string:contains(Goal, Key).
tool_instructions("find_on_page", Text) :-
  goal_row(Table, Row), table_cell(Table, Row, Column, Cell), page_quoted(Table, QT), page_quoted(Column, QC), page_quoted(Cell, Q),
  Text = fn:string:concat("Table ", QT, " row ", Row, ", ", QC, ": ", Q, ".").
goal_link(Ref) :- page_live(1), automation_goal(Goal), page_element(Ref, "link", Name), :string:contains(Goal, Name).
tool_instructions("click_element", Text) :- goal_link(Ref), page_quoted(Ref, Q), Text = fn:string:concat("The goal names the link ", Q, ".").

tool("navigate").
tool_action("navigate", "browser_navigate").
tool_description("navigate", "Load a URL in the live session's tab (on the server's allowed hosts), or go back, forward or reload.").
tool_summary("navigate", "navigate(url): a URL, or back, forward, reload.").
tool_param("navigate", "url", "string", "A URL on the server's allowed hosts, or back, forward or reload.").
tool_param_required("navigate", "url").
tool_next_intent("navigate", "automate", "Act on the page.").

tool("press_key").
tool_action("press_key", "browser_key").
tool_description("press_key", "Press a key on the live page, in the focused element.").
tool_summary("press_key", "press_key(key): press Enter, Tab, Escape, ArrowDown, Home, PageUp...").
# The key is a DOM key name, not an enum: the fourteen names cost a model
# 60 tokens at every later turn of a job, and the handler refuses any other
# name with the list (chrome.KeyError: "unknown key ... (Enter, Tab, ...)").
tool_param("press_key", "key", "string", "The key: Enter, Tab, Escape, Backspace, Delete, Space, ArrowUp, ArrowDown, ArrowLeft, ArrowRight, Home, End, PageUp or PageDown.").
tool_param_required("press_key", "key").
tool_param("press_key", "element_id", "string", "The element to press it on (default: the focused one).").
tool_next_intent("press_key", "automate", "Act on the page.").

# The generic tier: any element the page showed (by its ref), for the
# widget no rule above foresaw: type into it, choose its options, press
# a key on it. One tool, so the catalogue stays short.
tool("act_on_element").
tool_action("act_on_element", "browser_interact").
tool_description("act_on_element", "Act on any element of the live page by its ref, for a widget fill_form does not list: type text into it (replacing its text), choose options by their text, then press a key on it. Values are read back.").
tool_summary("act_on_element", "act_on_element(element_id, text, options, key): type, choose, press on any element.").
tool_param("act_on_element", "element_id", "string", "The element's ref.").
tool_param_required("act_on_element", "element_id").
tool_param("act_on_element", "text", "string", "Text to type into it.").
tool_param("act_on_element", "options", "array", "Options to choose, by their text.").
tool_param("act_on_element", "key", "string", "A key to press on it after (Enter, Tab, Escape, an arrow...).").
tool_next_intent("act_on_element", "automate", "Act on the page.").

tool("hover").
tool_action("hover", "browser_hover").
tool_description("hover", "Move the mouse over an element of the live page and report what changed.").
tool_summary("hover", "hover(element_id): move the mouse over an element.").
tool_param("hover", "element_id", "string", "The element.").
tool_param_required("hover", "element_id").
tool_next_intent("hover", "automate", "Act on the page.").

tool("wait_for").
tool_action("wait_for", "browser_wait").
tool_description("wait_for", "Wait (at most timeout_ms) until the live page shows a text, an element appears, or the network is quiet.").
tool_summary("wait_for", "wait_for(text, element_id, network_idle, timeout_ms).").
tool_param("wait_for", "text", "string", "A text the page should show.").
tool_param("wait_for", "element_id", "string", "An element (by ref or name) that should appear.").
tool_param("wait_for", "network_idle", "boolean", "Wait until no request is in flight.").
tool_param("wait_for", "timeout_ms", "integer", "The longest wait.").
tool_param_default("wait_for", "timeout_ms", 5000).
tool_idempotent("wait_for").
tool_next_intent("wait_for", "automate", "Act on the page.").

tool("answer_dialog").
tool_action("answer_dialog", "browser_dialog").
tool_description("answer_dialog", "Answer the JavaScript dialog the live page opened: accept (OK) or dismiss (Cancel), with the text a prompt asks for.").
tool_summary("answer_dialog", "Accept or dismiss the page's dialog.").
tool_param("answer_dialog", "accept", "boolean", "true accepts (OK), false dismisses (Cancel).").
tool_param_required("answer_dialog", "accept").
tool_param("answer_dialog", "text", "string", "The text a prompt dialog asks for.").
tool_instructions("answer_dialog", Text) :- page_dialog(Kind, Message), page_quoted(Message, Q), Text = fn:string:concat("The page's ", Kind, " dialog says: ", Q, ".").
tool_evidence("answer_dialog", "page_dialog").
tool_next_intent("answer_dialog", "automate", "Act on the page.").

tool("switch_tab").
tool_action("switch_tab", "browser_switch_tab").
tool_description("switch_tab", "Make another tab of the live session the current one.").
tool_summary("switch_tab", "switch_tab(tab): go to another tab.").
tool_param("switch_tab", "tab", "integer", "The tab's index.").
tool_param_required("switch_tab", "tab").
tool_param_enum("switch_tab", "tab", I) :- browser_tab(I, _, _, /false).
tool_instructions("switch_tab", Text) :- more_tabs(1), browser_tab(I, Title, _, /false), page_quoted(Title, Q), Text = fn:string:concat("Tab ", I, ": ", Q, ".").
tool_next_intent("switch_tab", "automate", "Act on the page.").

tool("close_tab").
tool_action("close_tab", "browser_close_tab").
tool_description("close_tab", "Close a tab of the live session (not its last one).").
tool_summary("close_tab", "close_tab(tab): close a tab.").
tool_param("close_tab", "tab", "integer", "The tab's index.").
tool_param_required("close_tab", "tab").
tool_param_enum("close_tab", "tab", I) :- browser_tab(I, _, _, _).
tool_next_intent("close_tab", "automate", "Act on the page.").

tool("upload_file").
tool_action("upload_file", "browser_upload").
tool_description("upload_file", "Choose files for a file field of the live page, from the server's upload directory.").
tool_summary("upload_file", "upload_file(element_id, files): files from the upload directory.").
tool_param("upload_file", "element_id", "string", "The file field.").
tool_param_required("upload_file", "element_id").
tool_param_enum("upload_file", "element_id", Ref) :- page_live(1), page_element(Ref, "file", _).
tool_param("upload_file", "files", "array", "File names in the server's upload directory.").
tool_param_required("upload_file", "files").
tool_next_intent("upload_file", "automate", "Act on the page.").

tool("take_screenshot").
tool_action("take_screenshot", "browser_snapshot_png").
tool_description("take_screenshot", "A PNG of the live page's viewport, as a resource (its URI and size; never inline).").
tool_summary("take_screenshot", "PNG of the live page, as a resource.").
tool_idempotent("take_screenshot").

tool("run_script").
tool_action("run_script", "browser_script").
tool_description("run_script", "Run JavaScript in the live page and return its value as JSON (at most 4 KiB). Allowed only where the operator enabled page scripts; the user confirms each.").
tool_summary("run_script", "Run JavaScript in the page (confirmed).").
tool_param("run_script", "script", "string", "An expression or a function body's value.").
tool_param_required("run_script", "script").

tool("close_session").
tool_action("close_session", "browser_close").
tool_description("close_session", "End the live browser session: its tabs, cookies and storage are gone.").
tool_summary("close_session", "End the live browser session.").

action_effect("browser_fill_form", "browser").
action_effect("browser_navigate", "network").
action_effect("browser_key", "browser").
action_effect("browser_interact", "browser").
action_effect("browser_hover", "browser").
action_effect("browser_dialog", "browser").
action_effect("browser_switch_tab", "browser").
action_effect("browser_close_tab", "browser").
action_effect("browser_upload", "browser").
action_effect("browser_script", "browser").
action_effect("browser_close", "browser").
pure_action("browser_find").
pure_action("browser_wait").
pure_action("browser_snapshot_png").

# Selection on a live page (intent automate; a goal is optional). While a
# dialog waits, only answering it is offered.
mandatory_for_intent("automate", "answer_dialog") :- has_live_session(1), dialog_open(1).
mandatory_for_intent("automate", "click_element") :- page_live(1), has_clickable(1).
mandatory_for_intent("automate", "fill_form") :- page_live(1), has_field(1).
mandatory_for_intent("automate", "find_on_page") :- page_live(1).
mandatory_for_intent("automate", "switch_tab") :- page_live(1), more_tabs(1).
relevant_to_intent("automate", "navigate", 45) :- page_live(1).
relevant_to_intent("automate", "press_key", 44) :- page_live(1).
relevant_to_intent("automate", "act_on_element", 44) :- page_live(1).
relevant_to_intent("automate", "hover", 43) :- page_live(1), has_clickable(1).
relevant_to_intent("automate", "wait_for", 42) :- page_live(1).
relevant_to_intent("automate", "close_tab", 41) :- page_live(1), more_tabs(1).
relevant_to_intent("automate", "upload_file", 41) :- page_live(1), browser_option("uploads").
relevant_to_intent("automate", "take_screenshot", 40) :- page_live(1).
relevant_to_intent("automate", "close_session", 30) :- has_live_session(1).
relevant_to_intent("automate", "run_script", 30) :- page_live(1), browser_option("scripts").
