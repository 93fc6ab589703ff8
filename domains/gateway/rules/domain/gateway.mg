# The gateway's own rules, loaded with every rule pack. The gateway writes
# the upstream catalogue as server facts (domain/upstream_NAME.mg), one
# block per upstream tool:
#
#   upstream(U).                           an upstream that listed its tools
#   upstream_pack(U, Pack).                the embedded pack serving it, if any
#   upstream_tool(U, Tool, Name).          Tool (named U_Name here) is Name upstream
#   upstream_hint(Tool, Hint).             "read_only", "destructive",
#                                          "idempotent", "open_world": the MCP
#                                          annotations with the spec's defaults
#   tool(Tool). tool_action(Tool, U). tool_description, tool_summary,
#   tool_param, tool_param_required        the tool catalogue
#
# Rule packs declare the intents and offer tools for them
# (mandatory_for_intent, relevant_to_intent), usually by the upstream
# name of a tool: upstream_tool(U, T, "read_text_file").

Decl upstream(Upstream)
  descr [doc("An upstream MCP server that listed its tools at start.")].
Decl upstream_pack(Upstream, Pack)
  descr [doc("The embedded rule pack that serves the upstream (filesystem, playwright, everything).")].
Decl upstream_tool(Upstream, Tool, Name)
  descr [doc("Tool is the upstream's tool Name.")].
Decl upstream_hint(Tool, Hint)
  descr [doc("An annotation hint of the upstream tool, with the MCP defaults applied: read_only, destructive, idempotent, open_world.")].

# What a tool may change, from its hints: a tool that is not read-only
# changes something upstream; an open-world one reaches beyond it.
tool_side_effect(T, "upstream") :- upstream_tool(_, T, _), !upstream_hint(T, "read_only").
tool_side_effect(T, "network") :- upstream_hint(T, "open_world"), !upstream_hint(T, "read_only").
tool_idempotent(T) :- upstream_hint(T, "idempotent").
