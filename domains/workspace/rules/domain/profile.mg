# Manifest declarations of the workspace domain: intents and the facts
# profile (Spec 04 sections 3.2.6-3.2.7). The kernel reads these facts at
# start-up; they must stay plain facts.
#
# Paths are relative to a root: with one root, relative to it ("src/a.go",
# "." for the root itself); with several, the first segment names the root
# ("api/src/a.go"). The server never shows its own absolute paths.

decl_intent("explore", "List a directory, map a tree, inspect a file or the roots.").
decl_intent("find", "Find files by name pattern or by content.").
decl_intent("read", "Read mentioned files: text, several, or media.").
decl_intent("edit", "Change mentioned files: preview then apply an edit, or write a file.").
decl_intent("reorganize", "Move files or directories, create directories.").

decl_intent_fact("explore", "focus", "optional").
decl_intent_fact("find", "focus", "optional").
decl_intent_fact("read", "mentioned", "required").
decl_intent_fact("edit", "mentioned", "required").
decl_intent_fact("edit", "change", "optional").
decl_intent_fact("edit", "previewed", "optional").
decl_intent_fact("reorganize", "mentioned", "optional").
decl_intent_fact("reorganize", "change", "optional").

decl_predicate("focus", "input", "The directory or file the work is about.").
decl_arg("focus", 0, "path", "string").

decl_predicate("mentioned", "both", "A file or directory the user named or a tool found.").
decl_arg("mentioned", 0, "path", "string").

decl_predicate("change", "input", "The kind of change wanted: edit, write, move or mkdir.").
decl_arg("change", 0, "kind", "string").

decl_predicate("previewed", "both", "An edit preview the client saw: the file and its digest then.").
decl_arg("previewed", 0, "path", "string").
decl_arg("previewed", 1, "digest", "string").

decl_temporal("previewed").
