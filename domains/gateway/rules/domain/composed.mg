# Composed tools: macro-tools the gateway builds from an upstream's own
# tools (compose.go). The catalogue writes, for an upstream that lists
# every tool a kind needs with the shape it needs:
#
#   upstream_macro(U, Tool, Kind).    Tool (named U_Kind) is composed of U's tools
#   macro_uses(Tool, UpstreamTool).   Tool calls UpstreamTool
#
# These rules declare them; a pack offers them for its intents. What a
# composed tool may change, whether it needs the user's confirmation and
# whom it is denied follow from the upstream tools it calls (here and in
# policy/gateway.mg): a composed tool is never less guarded than its parts.

Decl upstream_macro(Upstream, Tool, Kind)
  descr [doc("Tool is composed by the gateway of upstream Upstream's tools: search_text, replace, apply_edits or move.")].
Decl macro_uses(Tool, UpstreamTool)
  descr [doc("The composed Tool calls UpstreamTool.")].

tool(T) :- upstream_macro(_, T, _).
tool_action(T, U) :- upstream_macro(U, T, _).
tool_side_effect(T, E) :- macro_uses(T, P), tool_side_effect(P, E).

# search_text: the lines that hold a text, with context, instead of whole files.
tool_description(T, "Lines holding pattern in the files below path matching glob, with context lines; reads them server side.") :- upstream_macro(_, T, "search_text").
tool_summary(T, "Find text in files.") :- upstream_macro(_, T, "search_text").
tool_param(T, "pattern", "string", "Text to find (not a regexp).") :- upstream_macro(_, T, "search_text").
tool_param_required(T, "pattern") :- upstream_macro(_, T, "search_text").
tool_param(T, "path", "string", "Directory.") :- upstream_macro(_, T, "search_text").
tool_param_required(T, "path") :- upstream_macro(_, T, "search_text").
tool_param(T, "glob", "string", "Below path, e.g. **/*.py.") :- upstream_macro(_, T, "search_text").
tool_param_default(T, "glob", "**/*") :- upstream_macro(_, T, "search_text").
tool_param(T, "word", "boolean", "Whole words only.") :- upstream_macro(_, T, "search_text").
tool_param_default(T, "word", /false) :- upstream_macro(_, T, "search_text").
tool_param(T, "context", "integer", "Lines around each (0-5).") :- upstream_macro(_, T, "search_text").
tool_param_default(T, "context", 1) :- upstream_macro(_, T, "search_text").
tool_idempotent(T) :- upstream_macro(_, T, "search_text").

# replace: one diff of a text replaced across files; writes nothing. The
# plan is held server side; the previewed_edit fact it returns offers
# apply_edits with that diff.
tool_description(T, "One diff replacing old with new in every file below path matching glob, whole words unless word=false; writes nothing (apply it after).") :- upstream_macro(_, T, "replace").
tool_summary(T, "Preview a replace across files.") :- upstream_macro(_, T, "replace").
tool_param(T, "old", "string", "") :- upstream_macro(_, T, "replace").
tool_param_required(T, "old") :- upstream_macro(_, T, "replace").
tool_param(T, "new", "string", "") :- upstream_macro(_, T, "replace").
tool_param_required(T, "new") :- upstream_macro(_, T, "replace").
tool_param(T, "path", "string", "Directory.") :- upstream_macro(_, T, "replace").
tool_param_required(T, "path") :- upstream_macro(_, T, "replace").
tool_param(T, "glob", "string", "Below path, e.g. **/*.py.") :- upstream_macro(_, T, "replace").
tool_param_default(T, "glob", "**/*") :- upstream_macro(_, T, "replace").
tool_param(T, "word", "boolean", "") :- upstream_macro(_, T, "replace").
tool_param_default(T, "word", /true) :- upstream_macro(_, T, "replace").
tool_idempotent(T) :- upstream_macro(_, T, "replace").

# apply_edits: the previewed diff, applied through the upstream's
# edit_file (all edits of a file in one call), each file read back.
decl_predicate("previewed_edit", "both", "A replace the gateway previewed: the tool that applies it and the diff the user confirms.").
decl_arg("previewed_edit", 0, "tool", "string").
decl_arg("previewed_edit", 1, "diff", "string").
open_preview(A, D) :- previewed_edit(A, D), upstream_macro(_, A, "apply_edits").
tool_description(T, "Write the previewed diff through the upstream, if its files are unchanged.") :- upstream_macro(_, T, "apply_edits").
tool_summary(T, "Apply the previewed edit.") :- upstream_macro(_, T, "apply_edits").
tool_param(T, "diff", "string", "") :- upstream_macro(_, T, "apply_edits").
tool_param_required(T, "diff") :- upstream_macro(_, T, "apply_edits").
tool_param_enum(T, "diff", D) :- open_preview(T, D).

# move: makes the destination's directory, then moves.
tool_description(T, "Move or rename a file or directory; makes the destination's directory first.") :- upstream_macro(_, T, "move").
tool_summary(T, "Move, making the directory.") :- upstream_macro(_, T, "move").
tool_param(T, "source", "string", "") :- upstream_macro(_, T, "move").
tool_param_required(T, "source") :- upstream_macro(_, T, "move").
tool_param(T, "destination", "string", "Its directory is made if missing.") :- upstream_macro(_, T, "move").
tool_param_required(T, "destination") :- upstream_macro(_, T, "move").
