# The gateway's safety rules, loaded with every rule pack.
#
# A destructive upstream tool (destructiveHint, which MCP assumes for a
# tool that does not say it is read-only) needs the user's confirmation,
# unless a pack's policy waives it with confirmation_waived(Tool).
Decl confirmation_waived(Tool)
  descr [doc("Policy of a pack: the destructive tool needs no user confirmation.")].
requires_confirmation(T) :- upstream_hint(T, "destructive"), !confirmation_waived(T).

# Identity: a pack may reserve an intent to callers with a permission
# (intent_permission(Intent, Permission)); others get auth_insufficient.
Decl intent_permission(Intent, Permission)
  descr [doc("Policy of a pack: only callers with Permission may use Intent.")].
permitted(I) :- intent_permission(I, P), caller_permission(P).
permitted(I) :- intent_permission(I, _), caller_permission("*").
intent_denied(I) :- intent_permission(I, _), !permitted(I).
