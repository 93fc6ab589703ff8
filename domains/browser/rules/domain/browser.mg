# Tools that drive the server's own headless Chromium (actions browser_*,
# package domains/browser/chrome). browser_available(Engine) is an external
# predicate: without a browser these tools are simply not offered.

has_browser(1) :- browser_available(_).
browser_offered(1) :- has_browser(1), browser_may_open(_).

# A page the browser may open: http(s) on a host of the server's
# allowed_hosts (url_parts and browser_allowed_host are external).
page_scheme("http").
page_scheme("https").
browser_may_open(Url) :- current_url(Url), url_parts(Url, Scheme, Host), page_scheme(Scheme), browser_allowed_host(Host).
clickable_kind("button").
clickable_kind("link").
clickable_kind("checkbox").
clickable_kind("radio").
fillable_kind("input").
fillable_kind("textarea").
fillable_kind("search").
fillable_kind("email").
fillable_kind("password").

tool("open_page").
tool_action("open_page", "browser_open").
tool_description("open_page", "Load the page in the server's headless Chromium; the state delta asserts the console, network and element facts it saw.").
tool_summary("open_page", "Load the page in a real browser and observe it.").
tool_param("open_page", "url", "string", "The page.").
tool_param_required("open_page", "url").
tool_param_enum("open_page", "url", Url) :- browser_may_open(Url).
tool_evidence("open_page", "current_url").
tool_next_intent("open_page", "diagnose_error", "If the browser saw console errors or failed requests, diagnose them with the asserted facts.").
tool_next_intent("open_page", "automate", "Act on an observed interactive_element.").

tool("screenshot_page").
tool_action("screenshot_page", "browser_screenshot").
tool_description("screenshot_page", "PNG (base64) of the page's 1280x800 viewport in the server's headless Chromium.").
tool_summary("screenshot_page", "PNG screenshot of the page.").
tool_param("screenshot_page", "url", "string", "The page.").
tool_param_required("screenshot_page", "url").
tool_param_enum("screenshot_page", "url", Url) :- browser_may_open(Url).
tool_evidence("screenshot_page", "current_url").

tool("click_element").
tool_action("click_element", "browser_click").
tool_description("click_element", "Click an observed element of the current_url page in the server's browser and report what changed.").
tool_summary("click_element", "Click an observed element in a real browser.").
tool_param("click_element", "element_id", "string", "The element.").
tool_param_required("click_element", "element_id").
tool_param_enum("click_element", "element_id", Element) :- interactive_element(Element, Kind, _), clickable_kind(Kind).
tool_evidence("click_element", "interactive_element").
tool_next_intent("click_element", "diagnose_error", "If the click caused console errors or failed requests, diagnose them.").
tool_next_intent("click_element", "automate", "Go on with the page.") :- has_live_session(1).

tool("fill_field").
tool_action("fill_field", "browser_fill").
tool_description("fill_field", "Type into an observed field of the current_url page in the server's browser and report what changed.").
tool_summary("fill_field", "Type into an observed field in a real browser.").
tool_param("fill_field", "element_id", "string", "The field.").
tool_param_required("fill_field", "element_id").
tool_param_enum("fill_field", "element_id", Element) :- interactive_element(Element, Kind, _), fillable_kind(Kind).
tool_param("fill_field", "value", "string", "The text.").
tool_param_required("fill_field", "value").
tool_evidence("fill_field", "interactive_element").

action_effect("browser_open", "network").
action_effect("browser_screenshot", "network").
action_effect("browser_click", "browser").
action_effect("browser_fill", "browser").

# A live session (open_page starts one; the state delta asserts
# browser_session(Session, Url) and the page as facts, see live.mg):
# click_element acts on its page as it is. Without one click_element and
# fill_field load current_url afresh for each call. A session the client
# names that the server does not have open (it ended, or lives on another
# replica: browser_session_open) offers nothing of its own.
live_session(Session) :- browser_session(Session, _), has_browser(1), browser_session_open(Session).
has_live_session(1) :- live_session(_).
tool_evidence("click_element", "browser_session") :- has_live_session(1).
tool_evidence("fill_field", "browser_session") :- has_live_session(1).

# Selection: offered only with a browser and a URL it may open; click and
# fill only for elements observed on the page.
mandatory_for_intent("observe", "open_page") :- has_browser(1), browser_may_open(_).
relevant_to_intent("observe", "screenshot_page", 45) :- has_browser(1), browser_may_open(_).
mandatory_for_intent("automate", "click_element") :-
  has_browser(1), browser_may_open(_), automation_goal(_), interactive_element(_, Kind, _), clickable_kind(Kind).
# Without a live session a typed value is gone by the next call: fill_field
# is then only listed (score 60). A live session offers fill_form instead
# (live.mg); a client that states interactive_element facts with one still
# gets fill_field.
relevant_to_intent("automate", "fill_field", 60) :-
  has_browser(1), browser_may_open(_), automation_goal(_), interactive_element(_, Kind, _), fillable_kind(Kind), !has_live_session(1).
mandatory_for_intent("automate", "fill_field") :-
  has_live_session(1), browser_may_open(_), automation_goal(_), interactive_element(_, Kind, _), fillable_kind(Kind).

# Why the browser tools are absent, said where the client looks.
tool_instructions("summarize_observation", "The server's browser cannot run now (manifest extensions x-browser.reason), so open_page is not offered: state the page's console and network facts yourself.") :-
  browser_may_open(_), !has_browser(1).
