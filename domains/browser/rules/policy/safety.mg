# Safety policy (trust layer "policy"): no domain rule can add to these
# predicates.

# Anything that writes, deletes or pays needs the user's confirmation.
confirm_effect("filesystem").
confirm_effect("destructive").
confirm_effect("payments").
requires_confirmation(Tool) :- tool_side_effect(Tool, Effect), confirm_effect(Effect).

# Never automate a page that holds a payment form.
prohibited("plan_automation", "the page holds a payment form") :- interactive_element(_, "payment", _).

# Which identity may use which intent: "*" allows every intent,
# "intent:NAME" one of them. Anonymous callers (authentication off) hold "*".
intent_permitted(Intent) :- intent(Intent), caller_permission("*").
intent_permitted(Intent) :- intent(Intent), caller_permission(Permission), Permission = fn:string:concat("intent:", Intent).
intent_denied(Intent) :- intent(Intent), !intent_permitted(Intent).

# The server's own browser (external predicates url_parts and
# browser_allowed_host, computed by Go) opens only http and https pages on
# the hosts the operator allowed (allowed_hosts; default loopback only).
# The domain offers its tools only for such URLs; this holds even if
# domain rules are edited to offer more.
web_scheme("http").
web_scheme("https").
url_permitted(Url) :- url_parts(Url, Scheme, Host), web_scheme(Scheme), browser_allowed_host(Host).
browser_action("browser_open").
browser_action("browser_screenshot").
browser_action("browser_click").
browser_action("browser_fill").
browser_action("browser_fill_form").
browser_action("browser_navigate").
browser_action("browser_key").
browser_action("browser_interact").
browser_action("browser_hover").
browser_action("browser_upload").
browser_action("browser_script").
prohibited(Tool, "the server's browser opens only http and https pages on its allowed hosts") :-
  tool_action(Tool, Action), browser_action(Action), current_url(Url), !url_permitted(Url).

# Clicking or typing changes the page's state (effect "browser"). On a page
# served from this machine (a developer's own app) that needs no
# confirmation; on any other allowed host the user confirms.
loopback_host("localhost").
loopback_host("127.0.0.1").
loopback_host("::1").
requires_confirmation(Tool) :- tool_side_effect(Tool, "browser"), current_url(Url), url_parts(Url, _, Host), !loopback_host(Host).
# Typing into a page that asks for a password always needs confirmation.
requires_confirmation("fill_field") :- interactive_element(_, "password", _).
# Never act on a page that holds a payment form.
prohibited("click_element", "the page holds a payment form") :- interactive_element(_, "payment", _).
prohibited("fill_field", "the page holds a payment form") :- interactive_element(_, "payment", _).

# Live sessions (issue 28). Page scripts run only where the operator
# enabled them (browser scripts), and the user confirms each; an upload
# sends a file of the server's upload directory to the page, so the user
# confirms it too.
prohibited(Tool, "the server's operator has not enabled page scripts") :- tool_action(Tool, "browser_script"), !browser_option("scripts").
requires_confirmation(Tool) :- tool_action(Tool, "browser_script").
prohibited(Tool, "the server has no upload directory") :- tool_action(Tool, "browser_upload"), !browser_option("uploads").
requires_confirmation(Tool) :- tool_action(Tool, "browser_upload").

# Never act on a live page that holds a payment form (payment_field: a
# field whose label asks for card data); reading it, going elsewhere and
# ending the session stay possible.
page_acting_action("browser_click").
page_acting_action("browser_fill_form").
page_acting_action("browser_key").
page_acting_action("browser_interact").
page_acting_action("browser_hover").
page_acting_action("browser_upload").
page_acting_action("browser_script").
prohibited(Tool, "the page holds a payment form") :- tool_action(Tool, Action), page_acting_action(Action), payment_field(_).
