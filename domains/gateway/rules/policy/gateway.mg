# The gateway's safety rules, loaded with every rule pack.
#
# A destructive upstream tool (destructiveHint, which MCP assumes for a
# tool that does not say it is read-only) needs the user's confirmation,
# unless a pack's policy waives it with confirmation_waived(Tool).
Decl confirmation_waived(Tool)
  descr [doc("Policy of a pack: the destructive tool needs no user confirmation.")].
requires_confirmation(T) :- upstream_hint(T, "destructive"), !confirmation_waived(T).

# Identity, as in every domain: an intent is denied (auth_insufficient)
# unless the caller holds "intent:NAME" or "*" (anonymous callers, with
# authentication off, hold the server's anonymous permissions: "*" by
# default).
intent_permitted(I) :- intent(I), caller_permission("*").
intent_permitted(I) :- intent(I), caller_permission(P), P = fn:string:concat("intent:", I).
intent_denied(I) :- intent(I), !intent_permitted(I).

# A pack may also reserve an intent to callers with a permission of its
# own (intent_permission(Intent, Permission)): they need both.
Decl intent_permission(Intent, Permission)
  descr [doc("Policy of a pack: only callers with Permission may use Intent.")].
permitted(I) :- intent_permission(I, P), caller_permission(P).
permitted(I) :- intent_permission(I, _), caller_permission("*").
intent_denied(I) :- intent_permission(I, _), !permitted(I).

# An upstream's tools are offered only to callers holding "upstream:NAME"
# (or "*"): an identity allowed an intent still reaches no upstream it was
# not granted. The gateway's action checks the same before every call.
upstream_permitted(U) :- upstream(U), caller_permission("*").
upstream_permitted(U) :- upstream(U), caller_permission(P), P = fn:string:concat("upstream:", U).
# An upstream the caller may not use, then its tools: a request's work
# follows the upstreams it is denied, not the size of their catalogues.
Decl upstream_denied(Upstream)
  descr [doc("The caller does not hold the permission upstream:Upstream.")].
upstream_denied(U) :- upstream(U), !upstream_permitted(U).
prohibited(T, R) :- upstream_denied(U), upstream_tool(U, T, _), R = fn:string:concat("the caller does not hold the permission upstream:", U).

# A pack's own list of the tools that need the user's confirmation
# (pack_confirms) holds whatever the upstream's annotations say: an
# upstream marking write_file read-only does not lower it.
Decl pack_confirms(Tool)
  descr [doc("Policy of a pack: the tool needs the user's confirmation, whatever the upstream's annotations say.")].
requires_confirmation(T) :- pack_confirms(T).

# A composed tool (rules/domain/composed.mg) is held to the rules of every
# upstream tool it calls: it needs the user's confirmation when one of
# them does, and is denied whom one of them is denied.
requires_confirmation(T) :- macro_uses(T, P), requires_confirmation(P).
prohibited(T, R) :- macro_uses(T, P), prohibited(P, R).
