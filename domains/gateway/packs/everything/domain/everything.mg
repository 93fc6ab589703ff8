# Pack for the MCP "everything" reference server
# (@modelcontextprotocol/server-everything), for tests: every tool is
# reachable, read-only ones through one intent, the others through another.

decl_intent("try_samples", "Call the reference server's read-only sample tools.").
decl_intent("toggle_samples", "Call the reference server's sample tools that change its state.").

ev_tool(T) :- upstream_pack(U, "everything"), upstream_tool(U, T, _).

mandatory_for_intent("try_samples", T) :- upstream_pack(U, "everything"), upstream_tool(U, T, "echo").
relevant_to_intent("try_samples", T, 79) :- ev_tool(T), upstream_hint(T, "read_only").
relevant_to_intent("toggle_samples", T, 79) :- ev_tool(T), !upstream_hint(T, "read_only").
