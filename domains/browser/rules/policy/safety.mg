# Safety policy (trust layer "policy"): no domain rule can add to these
# predicates.

# Anything that writes, deletes or pays needs the user's confirmation.
confirm_effect("filesystem").
confirm_effect("destructive").
confirm_effect("payments").
requires_confirmation(Tool) :- tool_side_effect(Tool, Effect), confirm_effect(Effect).

# Never automate a page that holds a payment form.
prohibited("plan_automation", "the page holds a payment form") :- interactive_element(_, "payment", _).
