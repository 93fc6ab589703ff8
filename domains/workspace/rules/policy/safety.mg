# Safety policy of the workspace domain (trust layer "policy"): no domain
# rule can add to these predicates.

# Anything that writes, moves or deletes files needs the user's confirmation.
confirm_effect("filesystem").
confirm_effect("destructive").
requires_confirmation(Tool) :- tool_side_effect(Tool, Effect), confirm_effect(Effect).

# Which identity may use which intent: "*" allows every intent,
# "intent:NAME" one of them. Anonymous callers (authentication off) hold "*".
intent_permitted(Intent) :- intent(Intent), caller_permission("*").
intent_permitted(Intent) :- intent(Intent), caller_permission(Permission), Permission = fn:string:concat("intent:", Intent).
intent_denied(Intent) :- intent(Intent), !intent_permitted(Intent).
