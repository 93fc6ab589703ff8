# The tool catalogue: which tools answer which intent, their parameters
# (enums bound from the facts and from what the file system holds) and
# side effects. Descriptions are short on purpose: they are what a model
# reads every turn.

# ---- explore ----
# The roots are listed when there are several to choose from, or when the
# focus lies outside all of them.
mandatory_for_intent("explore", "list_roots") :- intent("explore"), !has_focus(1), several_roots(1).
mandatory_for_intent("explore", "list_roots") :- focus_outside(_).
mandatory_for_intent("explore", "list_dir") :- intent("explore"), !has_focus(1).
mandatory_for_intent("explore", "list_dir") :- focus_dir(_).
relevant_to_intent("explore", "tree", 60) :- intent("explore"), !has_focus(1).
relevant_to_intent("explore", "tree", 60) :- focus_dir(_).
# A focus that does not exist: list the root and offer to search for it.
mandatory_for_intent("explore", "list_dir") :- focus_missing(_).
relevant_to_intent("explore", "search", 50) :- focus_missing(_).
tool_instructions("list_dir", "The focus path does not exist; this lists the root. Search for the name.") :- focus_missing(_).
mandatory_for_intent("explore", "file_info") :- focus_file(_).
relevant_to_intent("explore", "file_info", 40) :- focus_dir(_).

tool("list_roots").
tool_action("list_roots", "list_roots").
tool_description("list_roots", "List the directories this server may access.").
tool_summary("list_roots", "List accessible roots.").
tool_idempotent("list_roots").

tool("list_dir").
tool_action("list_dir", "list_dir").
tool_description("list_dir", "List a directory, optionally with sizes.").
tool_summary("list_dir", "List a directory.").
tool_param("list_dir", "path", "string", "").
tool_param_default("list_dir", "path", Path) :- focus_dir(Path).
tool_param_default("list_dir", "path", ".") :- intent("explore"), !has_focus(1).
tool_param_default("list_dir", "path", ".") :- focus_missing(_).
tool_param("list_dir", "sizes", "boolean", "").
tool_idempotent("list_dir").
tool_next_intent("list_dir", "read", "Read files you found.").

tool("tree").
tool_action("tree", "tree").
tool_description("tree", "Directory tree below a path.").
tool_summary("tree", "Directory tree.").
tool_param("tree", "path", "string", "").
tool_param_default("tree", "path", Path) :- focus_dir(Path).
tool_param_default("tree", "path", ".") :- intent("explore"), !has_focus(1).
tool_param("tree", "depth", "integer", "Levels, 1-10.").
tool_param_default("tree", "depth", 3).
tool_idempotent("tree").

tool("file_info").
tool_action("file_info", "file_info").
tool_description("file_info", "Size, kind, mode, time and digest of a path.").
tool_summary("file_info", "File metadata.").
tool_param("file_info", "path", "string", "").
tool_param_default("file_info", "path", Path) :- focus(Path), entry(Path, Kind), Kind != "missing", Kind != "outside".
tool_idempotent("file_info").

# ---- find ----
mandatory_for_intent("find", "search").
# A mentioned file that does not exist may be elsewhere: offer to find it.
relevant_to_intent("read", "search", 50) :- missing_file(_).
relevant_to_intent("edit", "search", 50) :- missing_file(_), !wants("write").
tool_instructions("search", "A mentioned file does not exist; search for its name.") :- missing_file(_).

tool("search").
tool_action("search", "search").
tool_description("search", "Find files by glob (*, ?, **); with text, the lines containing it.").
tool_summary("search", "Find files by name or content.").
tool_param("search", "glob", "string", "Default: all files.").
tool_param("search", "text", "string", "Literal text to find.").
tool_param("search", "path", "string", "Directory to search.").
tool_param_default("search", "path", Path) :- focus_dir(Path).
tool_idempotent("search").
tool_next_intent("search", "read", "Read the files found.").

# ---- read ----
# A few text files (a search's finds) are read at once: read_files is then
# the one mandatory tool and, taking no argument, runs in the call that
# selected it. More than a few are the model's to choose from.
mandatory_for_intent("read", "read_file") :- text_file(_), !few_text_files(1).
relevant_to_intent("read", "read_file", 60) :- few_text_files(1).
mandatory_for_intent("read", "read_files") :- few_text_files(1).
relevant_to_intent("read", "read_files", 60) :- several_text_files(1), !few_text_files(1).
mandatory_for_intent("read", "read_media") :- media_file(_).
# A binary file that is neither text nor media: describe it instead.
mandatory_for_intent("read", "file_info") :- binary_file(_).
tool_param_default("file_info", "path", Path) :- intent("read"), binary_file(Path).

tool("read_file").
tool_action("read_file", "read_file").
tool_description("read_file", "Read a text file, or its first/last lines.").
tool_summary("read_file", "Read a text file.").
tool_param("read_file", "path", "string", "").
tool_param_required("read_file", "path").
tool_param_enum("read_file", "path", Path) :- text_file(Path).
tool_param("read_file", "head", "integer", "First N lines.").
tool_param("read_file", "tail", "integer", "Last N lines.").
tool_idempotent("read_file").
tool_next_intent("read_file", "edit", "Edit the file.").

tool("read_files").
tool_action("read_files", "read_files").
tool_description("read_files", "Read all mentioned text files.").
tool_summary("read_files", "Read all mentioned files.").
tool_idempotent("read_files").
tool_next_intent("read_files", "edit", "Edit one of the files.").

tool("read_media").
tool_action("read_media", "read_media").
tool_description("read_media", "Read an image or audio file as base64.").
tool_summary("read_media", "Read a media file.").
tool_param("read_media", "path", "string", "").
tool_param_required("read_media", "path").
tool_param_enum("read_media", "path", Path) :- media_file(Path).
tool_idempotent("read_media").

# ---- edit ----
# An edit is previewed (a unified diff, nothing written) before it is
# applied; apply_edit exists only for an open edit (a previewed fact whose
# signed id the server issued, unexpired: signed_edit), and its argument
# is the previewed diff, so the user confirming it sees the diff.
# It writes exactly what the preview showed, and only if the file still
# has the content it had then.
# Once an edit is open, applying it is what follows the preview: apply_edit
# is then the one mandatory tool, its diff fixed by the preview, so the
# bridge asks the user (the question shows the diff) in the call that
# previewed it; another preview stays on offer.
mandatory_for_intent("edit", "preview_edit") :- text_file(_), !wants("write"), !has_open_edit(1).
relevant_to_intent("edit", "preview_edit", 50) :- text_file(_), !wants("write"), has_open_edit(1).
mandatory_for_intent("edit", "apply_edit") :- has_open_edit(1), !wants("write").
mandatory_for_intent("edit", "write_file") :- wants("write").
mandatory_for_intent("edit", "write_file") :- missing_file(_).
# Without a mentioned file the edit tools are still offered (their paths
# are then any path, which the tools check): a model that calls one by the
# name the intent's description gives reaches it in the same call.
mandatory_for_intent("edit", "preview_edit") :- intent("edit"), !has_mentioned(1), !wants("write").
# Several edits, or one text replaced in every file, as one diff.
# (A directory mentioned, as replace's path states it, offers them too.)
relevant_to_intent("edit", "preview_edits", 40) :- intent("edit"), !has_mentioned(1), !wants("write").
relevant_to_intent("edit", "preview_edits", 40) :- existing(_), !wants("write").
relevant_to_intent("edit", "replace", 40) :- intent("edit"), !has_mentioned(1), !wants("write").
relevant_to_intent("edit", "replace", 40) :- existing(_), !wants("write").

tool("preview_edit").
tool_action("preview_edit", "preview_edit").
tool_description("preview_edit", "Diff of replacing old with new; writes nothing.").
tool_summary("preview_edit", "Preview an edit as a diff.").
tool_param("preview_edit", "path", "string", "").
tool_param_required("preview_edit", "path").
tool_param_enum("preview_edit", "path", Path) :- text_file(Path).
tool_param("preview_edit", "old", "string", "Exact text, found once.").
tool_param_required("preview_edit", "old").
tool_param("preview_edit", "new", "string", "").
tool_param_required("preview_edit", "new").
tool_param("preview_edit", "all", "boolean", "Every occurrence.").
tool_idempotent("preview_edit").
tool_next_intent("preview_edit", "edit", "Apply the previewed edit.").

# preview_edits and replace preview one plan of several files (one diff);
# the server keeps it under a handle the previewed fact carries, and
# apply_edit applies it after one consent.
tool("preview_edits").
tool_action("preview_edits", "preview_edits").
tool_description("preview_edits", "One diff of several edits [{path, old, new, all}]; writes nothing.").
tool_summary("preview_edits", "Preview several edits as one diff.").
tool_param("preview_edits", "edits", "array", "[{path, old, new, all}]").
tool_param_required("preview_edits", "edits").
tool_idempotent("preview_edits").
tool_next_intent("preview_edits", "edit", "Apply the previewed edit.").

tool("replace").
tool_action("replace", "replace").
tool_description("replace", "One diff replacing old with new in every file matching glob (below path), whole words unless word=false; writes nothing.").
tool_summary("replace", "Preview a replace across files.").
tool_param("replace", "old", "string", "").
tool_param_required("replace", "old").
tool_param("replace", "new", "string", "").
tool_param_required("replace", "new").
tool_param("replace", "glob", "string", "Default: all files.").
tool_param("replace", "path", "string", "Directory.").
tool_param("replace", "word", "boolean", "").
tool_param_default("replace", "word", /true).
tool_idempotent("replace").
tool_next_intent("replace", "edit", "Apply the previewed edit.").

tool("apply_edit").
tool_action("apply_edit", "apply_edit").
tool_description("apply_edit", "Write a previewed edit if the file is unchanged.").
tool_summary("apply_edit", "Apply a previewed edit.").
tool_param("apply_edit", "diff", "string", "").
tool_param_required("apply_edit", "diff").
tool_param_enum("apply_edit", "diff", Diff) :- open_edit(_, Diff, _).
tool_valid_until("apply_edit", Until) :- last_edit_expiry(Until).
tool_next_intent("apply_edit", "read", "Read the result.").

tool("write_file").
tool_action("write_file", "write_file").
tool_description("write_file", "Create a file, or replace one whose digest you pass.").
tool_summary("write_file", "Write a whole file.").
tool_param("write_file", "path", "string", "").
tool_param_required("write_file", "path").
tool_param_enum("write_file", "path", Path) :- mentioned(Path), entry(Path, Kind), Kind != "dir", Kind != "outside".
tool_param("write_file", "content", "string", "").
tool_param_required("write_file", "content").
tool_param("write_file", "digest", "string", "Of the file it replaces.").

# ---- reorganize ----
mandatory_for_intent("reorganize", "move") :- existing(_), !wants("mkdir").
# Without a mentioned path, move is still offered (its from is then any
# path, which the move checks): a model that calls move by the name the
# intent's description gives reaches it in the same call.
mandatory_for_intent("reorganize", "move") :- intent("reorganize"), !has_mentioned(1), !wants("mkdir").
mandatory_for_intent("reorganize", "create_dir") :- intent("reorganize"), !wants("move").

tool("move").
tool_action("move", "move").
tool_description("move", "Move or rename a file or directory; makes the destination's parent directories.").
tool_summary("move", "Move or rename.").
# from is any path (the move checks it): a file mentioned for another job
# does not restrict what can be moved.
tool_param("move", "from", "string", "").
tool_param_required("move", "from").
tool_param("move", "to", "string", "Must not exist.").
tool_param_required("move", "to").

tool("create_dir").
tool_action("create_dir", "create_dir").
tool_description("create_dir", "Create a directory and its parents.").
tool_summary("create_dir", "Create a directory.").
tool_param("create_dir", "path", "string", "").
tool_param_required("create_dir", "path").
tool_idempotent("create_dir").

# ---- side effects ----
action_effect("apply_edit", "filesystem").
action_effect("write_file", "filesystem").
action_effect("move", "filesystem").
action_effect("create_dir", "filesystem").
pure_action("list_roots").
pure_action("list_dir").
pure_action("tree").
pure_action("file_info").
pure_action("search").
pure_action("read_file").
pure_action("read_files").
pure_action("read_media").
pure_action("preview_edit").
pure_action("preview_edits").
pure_action("replace").
tool_side_effect(Tool, Effect) :- tool_action(Tool, Action), action_effect(Action, Effect).
tool_side_effect(Tool, "none") :- tool_action(Tool, Action), pure_action(Action).
