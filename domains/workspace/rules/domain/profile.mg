# Manifest declarations of the workspace domain: intents and the facts
# profile (Spec 04 sections 3.2.6-3.2.7). The kernel reads these facts at
# start-up; they must stay plain facts.
#
# Paths are relative to a root: with one root, relative to it ("src/a.go",
# "." for the root itself); with several, the first segment names the root
# ("api/src/a.go"). The server never shows its own absolute paths.

# Each intent's description names the tools it can offer, with their
# parameters: a model reads it in the fixed tool list and may call one at
# once through invoke_macro_tool (the bridge evaluates the intent that
# selects it in the same call), one model turn instead of two.
decl_intent("explore", "Explore: list_dir(path, sizes), tree(path, depth), file_info(path).").
decl_intent("find", "Find files by name or content: search(glob, text, path).").
decl_intent("read", "Read files: read_file(path, head, tail), read_files().").
decl_intent("edit", "Diff then apply_edit: preview_edit(path, old, new, all), preview_edits(edits=[{path,old,new}]), replace(old, new, glob); write_file(path, content, digest).").
decl_intent("reorganize", "Move files (parents made), make dirs: move(from, to), create_dir(path).").

decl_intent_fact("explore", "focus", "optional").
decl_intent_fact("find", "focus", "optional").
decl_intent_fact("read", "mentioned", "required").
decl_intent_fact("edit", "mentioned", "optional").
decl_intent_fact("edit", "change", "optional").
decl_intent_fact("edit", "previewed", "optional").
decl_intent_fact("reorganize", "mentioned", "optional").
decl_intent_fact("reorganize", "change", "optional").

decl_predicate("focus", "input", "The directory or file in focus.").
decl_arg("focus", 0, "path", "string").

decl_predicate("mentioned", "both", "A file or directory named or found.").
decl_arg("mentioned", 0, "path", "string").

decl_predicate("change", "input", "Change wanted: edit, write, move or mkdir.").
decl_arg("change", 0, "kind", "string").

decl_predicate("previewed", "both", "An edit preview_edit showed (it returns this fact).").
decl_arg("previewed", 0, "path", "string").
decl_arg("previewed", 1, "edit", "string").
decl_arg("previewed", 2, "old", "string").
decl_arg("previewed", 3, "new", "string").
decl_arg("previewed", 4, "diff", "string").

# previewed is temporal: preview_edit stamps it with the time of the
# preview. The time is the client's to send and gives nothing: an edit id
# expires by its own signed expiry, by the server's clock.
decl_temporal("previewed").
